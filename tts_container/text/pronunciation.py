"""Pronunciation control in a request's text: inline phonemes, a lexicon, and pauses (docs/pronunciation.md).

- Inline phonemes, misaki's form ``[Kokoro](/kˈOkəɹO/)``: kept intact on the way to misaki's English G2P;
  for the eSpeak languages spliced in here (:func:`with_inline_phonemes`).
- A lexicon (``{"Kokoro": "kˈOkəɹO"}``): each whole word it names becomes the inline form
  (:func:`apply_lexicon`); a word written inline keeps its own phonemes.
- ``[pause:0.5s]`` / ``[pause:300ms]``: that much silence (at most :data:`MAX_PAUSE_S`) between the
  parts, spoken apart (:func:`spoken_parts`).

Captions show the written word, never the marker; a malformed marker is read as written, never refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# The word(s) in brackets (no brackets or line breaks inside), then the phonemes between slashes.
INLINE_PHONEMES = re.compile(r"\[([^\[\]\n]+)\]\(/([^/()\[\]\n]+)/\)")
PAUSE = re.compile(r"\[pause:\s*(\d{1,4}(?:\.\d{1,3})?)\s*(ms|s)\s*\]", re.IGNORECASE)
MAX_PAUSE_S = 10.0  # a longer pause is this long: a listener takes silence past it for a fault
# Private-use characters stand in for the phonemes while the speech screen reads the text: it leaves
# them alone (they are neither letters nor spaces, and in no script), so IPA in another script (θ is
# Greek) is not taken for a foreign word.
_HELD_BASE = 0xF0000
_HELD = re.compile(rf"\]([{chr(_HELD_BASE)}-{chr(_HELD_BASE + 0xFFFD)}])")


@dataclass(frozen=True, slots=True)
class Pause:
    """Silence of ``seconds`` between two parts of a request."""

    seconds: float


def spoken_parts(text: str) -> list[str | Pause]:
    """``text`` cut at its pause markers: the texts to speak (blank ones left out) and the pauses."""
    parts: list[str | Pause] = []
    at = 0
    for match in PAUSE.finditer(text):
        if text[at : match.start()].strip():
            parts.append(text[at : match.start()])
        amount = float(match.group(1)) / (1000.0 if match.group(2).lower() == "ms" else 1.0)
        if amount > 0:
            parts.append(Pause(min(amount, MAX_PAUSE_S)))
        at = match.end()
    if text[at:].strip():
        parts.append(text[at:])
    return parts


def without_pauses(text: str | None) -> str | None:
    """A context text (``previous_text``/``next_text``) without its pause markers."""
    return PAUSE.sub(" ", text) if text else text


def apply_lexicon(text: str, lexicon: tuple[tuple[str, str], ...]) -> str:
    """Every whole word of ``text`` that ``lexicon`` names, in the inline form with its phonemes; words
    already written inline are left as they are. Longer entries first, so "New-York" wins over "New"."""
    if not lexicon:
        return text
    by_word = {word.casefold(): phonemes for word, phonemes in lexicon}
    words = sorted(by_word, key=len, reverse=True)
    pattern = re.compile(
        r"(?<!\w)(" + "|".join(re.escape(word) for word in words) + r")(?!\w)", re.IGNORECASE
    )

    def inline(match: re.Match[str]) -> str:
        return f"[{match.group(1)}](/{by_word[match.group(1).casefold()]}/)"

    return "".join(
        piece if is_marker else pattern.sub(inline, piece) for piece, is_marker in _around_markers(text)
    )


def _around_markers(text: str) -> Iterator[tuple[str, bool]]:
    """``text`` as its pieces: each inline marker (True) and the text between them (False)."""
    at = 0
    for match in INLINE_PHONEMES.finditer(text):
        yield text[at : match.start()], False
        yield match.group(0), True
        at = match.end()
    yield text[at:], False


def marker_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s inline markers are (start, end): text a normalizer must leave as it is."""
    return [match.span() for match in INLINE_PHONEMES.finditer(text)]


def hold_phonemes(text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` with each inline marker's ``(/phonemes/)`` replaced by one private-use character, and
    the phonemes held; :func:`restore_phonemes` puts them back."""
    held: list[str] = []

    def hold(match: re.Match[str]) -> str:
        held.append(match.group(2))
        return f"[{match.group(1)}]{chr(_HELD_BASE + len(held) - 1)}"

    return INLINE_PHONEMES.sub(hold, text), tuple(held)


def restore_phonemes(text: str, held: tuple[str, ...]) -> str:
    """The text :func:`hold_phonemes` made, with its phonemes back (a marker whose word the screen
    dropped is dropped whole)."""
    if not held:
        return text

    def restore(match: re.Match[str]) -> str:
        index = ord(match.group(1)) - _HELD_BASE
        return f"](/{held[index]}/)" if index < len(held) else "]"

    restored = _HELD.sub(restore, text)
    return re.sub(rf"[{chr(_HELD_BASE)}-{chr(_HELD_BASE + 0xFFFD)}]", "", restored)


def with_inline_phonemes(g2p: Callable[[str], tuple[str, Any]]) -> Callable[[str], tuple[str, Any]]:
    """A G2P that does not read the inline form (eSpeak's), made to: the text between markers goes to
    ``g2p``, each marker's phonemes are put in its place."""

    def read(text: str) -> tuple[str, Any]:
        if not INLINE_PHONEMES.search(text):
            return g2p(text)
        said = []
        for piece, is_marker in _around_markers(text):
            if is_marker:
                match = INLINE_PHONEMES.fullmatch(piece)
                assert match is not None
                said.append(match.group(2).strip())
            elif piece.strip():
                said.append(g2p(piece)[0].strip())
        return " ".join(part for part in said if part), None

    return read
