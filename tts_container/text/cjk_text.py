"""Japanese and Mandarin text as it is said, and its phonemes mapped back to the words as written.

Both readers rewrite what their G2P would misread (numbers, full-width forms) into the words said for
it, keeping for every spoken character the written span it stands for (:class:`SpokenText`), so captions
show "3本", not "サンボン". :func:`assemble` joins the words' phonemes into one
:class:`~tts_container.text.g2p.Phonemes` whose words are written slices; spoken words from one rewritten
span ("二零" and "二四" of "2024") are one written word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Rewrite", "SpokenPiece", "SpokenText", "assemble"]

_SPACES = re.compile(r"\s+")
# Punctuation has no word: its phonemes are pauses (the same set :class:`~tts_container.text.g2p.Phonemes`
# leaves out of words).
_PUNCTUATION = frozenset(".,;:!?…—-\"'()[]«»“”¿¡")


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Written characters ``[start, end)`` are said as ``spoken``."""

    start: int
    end: int
    spoken: str


@dataclass(frozen=True, slots=True)
class SpokenText:
    """The written text, its spoken form, and for each spoken character the written span it says."""

    written: str
    spoken: str
    origin: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, written: str, rewrites: Iterable[Rewrite]) -> SpokenText:
        """``written`` with ``rewrites`` (in order, not overlapping) applied; the rest said as written."""
        spoken: list[str] = []
        origin: list[tuple[int, int]] = []
        at = 0
        for rewrite in rewrites:
            for index in range(at, rewrite.start):
                spoken.append(written[index])
                origin.append((index, index + 1))
            spoken.append(rewrite.spoken)
            origin.extend([(rewrite.start, rewrite.end)] * len(rewrite.spoken))
            at = rewrite.end
        for index in range(at, len(written)):
            spoken.append(written[index])
            origin.append((index, index + 1))
        return cls(written, "".join(spoken), tuple(origin))

    def written_span(self, start: int, end: int) -> tuple[int, int]:
        """The written characters that spoken characters ``[start, end)`` say."""
        spans = self.origin[start:end]
        if not spans:
            return (0, 0)
        return min(a for a, _ in spans), max(b for _, b in spans)


@dataclass(frozen=True, slots=True)
class SpokenPiece:
    """Phonemes, and the spoken characters ``[start, end)`` they say (``start`` -1: no word, a pause)."""

    phonemes: str
    start: int = -1
    end: int = -1


def assemble(
    spoken: SpokenText, pieces: Sequence[SpokenPiece]
) -> tuple[str, tuple[str, ...], tuple[int, ...]]:
    """One phoneme string from ``pieces`` in order (whitespace collapsed, ends stripped), its written
    words, and for each phoneme character the index of its written word (-1: space or punctuation).

    A piece is a word when it has a spoken span and a letter among its phonemes; a word whose written
    span overlaps the previous word's is the same written word.
    """
    chars: list[str] = []
    owners: list[int] = []
    words: list[str] = []
    spans: list[tuple[int, int]] = []
    for piece in pieces:
        word = -1
        if piece.start >= 0 and any(char.isalnum() for char in piece.phonemes):
            start, end = spoken.written_span(piece.start, piece.end)
            if spans and start < spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
                words.append("")
            word = len(spans) - 1
        for char in piece.phonemes:
            if char.isspace():
                if chars and chars[-1] != " ":
                    chars.append(" ")
                    owners.append(-1)
            else:
                chars.append(char)
                owners.append(-1 if char in _PUNCTUATION else word)
    while chars and chars[-1] == " ":
        chars.pop()
        owners.pop()
    written = tuple(_SPACES.sub(" ", spoken.written[a:b]).strip() or spoken.written[a:b] for a, b in spans)
    return "".join(chars), written, tuple(owners)
