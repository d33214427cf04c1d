"""Text as a person reads it aloud: numbers, units, times, dates, symbols and abbreviations in words.

Runs between the speech filter and G2P: "Drive 60 km/h." is read "Drive sixty kilometers per hour.";
English only, other languages pass through. :func:`normalize` returns the spoken text;
:func:`spoken_words` each written word with the words said for it, so captions show "km/h"
(:class:`NormalizedText` maps G2P's tokens back). Ordered regular expressions with context checks, one
module per family; spelled letters are spaced capitals ("P M": misaki reads a lone capital as its letter
name). Why our own rules and not a WFST normalizer: docs/benchmarks.md, "Text normalization".
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from tts_container.text.normalization import calendar_rules, numeric_rules, web_rules, word_rules
from tts_container.text.normalization.scanner import Piece, Scanner
from tts_container.text.normalization.tables import ABBREVIATIONS, PLACE_OR_TITLE
from tts_container.text.pronunciation import marker_spans

__all__ = ["ENGLISH_DIALECTS", "NormalizedText", "Reading", "normalize", "normalize_text", "spoken_words"]

# Dialect (as :func:`tts_container.text.g2p.dialect_for` names it) -> British conventions?
ENGLISH_DIALECTS: dict[str, bool] = {"en-us": False, "en-gb": True}

_SCANNER = Scanner(
    (
        *web_rules.RULES,
        *calendar_rules.RULES,
        *web_rules.PHONE_RULES,
        *word_rules.RULES,
        *numeric_rules.RULES,
        *word_rules.LATE_RULES,
        *numeric_rules.FALLBACK_RULES,
    )
)
_WORD = re.compile(r"\S+")
_LEADING = "\"'“‘([{¿¡"
_TRAILING = "\"'”’)]},;:!?…"
_KEEPS_PERIOD = frozenset(ABBREVIATIONS) | frozenset(PLACE_OR_TITLE)
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+")
# misaki (spaCy) takes "M." for an abbreviation and drops the sentence's period with it ("P M." is
# read without the falling end); a space keeps the period its own token.
_LETTER_THEN_PERIOD = re.compile(r"(?<![\w.])([A-Z])\.$")


@dataclass(frozen=True, slots=True)
class Reading:
    """One written word and the words spoken for it (the same when nothing was rewritten)."""

    written: str
    spoken: str


@dataclass(frozen=True, slots=True)
class _Unit:
    """A written word (or words one rewrite spans) and where its spoken words lie in the spoken text."""

    written: str
    spoken_start: int
    spoken_end: int
    changed: bool


@dataclass(frozen=True, slots=True)
class NormalizedText:
    """The written text, its spoken form, and which written word each part of the spoken form says."""

    written: str
    spoken: str
    units: tuple[_Unit, ...]

    def readings(self) -> tuple[Reading, ...]:
        """Every written word with its spoken words, in order."""
        return tuple(
            Reading(u.written, " ".join(self.spoken[u.spoken_start : u.spoken_end].split()))
            for u in self.units
        )

    def rewritten_word_at(self, offset: int) -> tuple[int, str] | None:
        """(index, written word) of the rewritten word whose spoken words cover ``offset`` in
        :attr:`spoken`; None where the spoken text is the written text."""
        starts = [u.spoken_start for u in self.units]
        index = bisect.bisect_right(starts, offset) - 1
        if index < 0:
            return None
        unit = self.units[index]
        if unit.changed and offset < unit.spoken_end:
            return index, unit.written
        return None


def normalize(text: str, dialect: str = "en-us") -> str:
    """``text`` as it is said: "It weighs 3.5kg." -> "It weighs three point five kilograms."."""
    return normalize_text(text, dialect).spoken


def spoken_words(text: str, dialect: str = "en-us") -> tuple[Reading, ...]:
    """Each written word of ``text`` with the words said for it: ("km/h", "kilometers per hour")."""
    return normalize_text(text, dialect).readings()


def normalize_text(text: str, dialect: str = "en-us") -> NormalizedText:
    """The spoken form of ``text`` with its map back to the written words (see :class:`NormalizedText`).

    ``dialect`` is ``en-us`` or ``en-gb`` for English; any other dialect (``fr-fr``, ``es``, ...) passes
    the text through unchanged.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    british = ENGLISH_DIALECTS.get(dialect.lower())
    pieces = [] if british is None else _SCANNER.pieces(text, british)
    if pieces and (kept := marker_spans(text)):  # inline phonemes are said as written: no rule touches them
        pieces = [p for p in pieces if not any(p.start < end and start < p.end for start, end in kept)]
    spoken, starts, ends = _assemble(text, pieces)
    return NormalizedText(text, spoken, _units(text, pieces, spoken, starts, ends))


def _assemble(text: str, pieces: list[Piece]) -> tuple[str, list[int], list[int]]:
    """The spoken text, and for every written offset where its spoken words start and end."""
    out: list[str] = []
    length = 0
    starts = [0] * (len(text) + 1)
    ends = [0] * (len(text) + 1)
    position = 0

    def emit(chunk: str) -> None:
        nonlocal length
        out.append(chunk)
        length += len(chunk)

    def copy_to(stop: int) -> None:
        nonlocal position
        for index in range(position, stop):
            starts[index] = length
            emit(text[index])
            ends[index + 1] = length
        position = max(position, stop)

    for piece in pieces:
        copy_to(piece.start)
        said = piece.spoken.strip()
        previous = out[-1][-1:] if out else ""
        if said and previous.isalnum() and said[0].isalnum():
            emit(" ")
        for index in range(piece.start, piece.end):
            starts[index] = length
        if _LETTER_THEN_PERIOD.search(said) or (
            said[-1:].isupper() and text[piece.end : piece.end + 1] == "."
        ):
            said = _LETTER_THEN_PERIOD.sub(r"\1 .", said) if said.endswith(".") else said + " "
        if said:
            emit(said)
        for index in range(piece.start + 1, piece.end + 1):
            ends[index] = length
        position = piece.end
        following = text[piece.end : piece.end + 1]
        last = said[-1:] or previous  # an unsaid piece (the "/" of "and/or") still parts two words
        if last.isalnum() and following and (following.isalnum() or following in "$€£¥"):
            emit(" ")
    copy_to(len(text))
    starts[len(text)] = length
    return "".join(out), starts, ends


def _units(
    text: str, pieces: list[Piece], spoken: str, starts: list[int], ends: list[int]
) -> tuple[_Unit, ...]:
    """Written words, merged where one rewrite spans several, with their spoken spans."""
    spans = [[m.start(), m.end(), False] for m in _WORD.finditer(text)]
    word_starts = [span[0] for span in spans]
    owner = list(range(len(spans)))  # the word each word was merged into
    for piece in pieces:
        first = max(0, bisect.bisect_right(word_starts, piece.start) - 1)
        last = max(first, bisect.bisect_left(word_starts, max(piece.end, piece.start + 1)) - 1)
        touched = [i for i in range(first, last + 1) if spans[i][0] < max(piece.end, piece.start + 1)]
        touched = [i for i in touched if piece.start < spans[i][1]]
        if not touched:
            continue
        head = owner[touched[0]]
        for index in touched:
            spans[owner[index]][2] = True
        for index in range(touched[0], touched[-1] + 1):
            if owner[index] != head:
                spans[head][1] = max(spans[head][1], spans[owner[index]][1])
                owner[index] = head
    units = []
    for index, (start, end, changed) in enumerate(spans):
        if owner[index] != index:
            continue
        written = _caption(text[start:end])
        core_start = start + text[start:end].index(written[:1]) if written else start
        core_end = core_start + len(written)
        units.append(_Unit(written, starts[core_start], ends[core_end], bool(changed)))
    return tuple(units)


def _caption(word: str) -> str:
    """A written word as a caption shows it: without the quotes and the sentence punctuation around it."""
    core = word.lstrip(_LEADING).rstrip(_TRAILING)
    if core.endswith(".") and core not in _KEEPS_PERIOD and not _INITIALS.fullmatch(core):
        core = core.rstrip(".")
    return core or word
