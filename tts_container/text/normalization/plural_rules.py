"""Numbers with an ``s``: decades ("the 1990s", "the '90s"), round numbers as counts ("1,000s of birds",
"10s of dollars"), and years by their last two digits ("back in '08").

Apart from the other number rules because the same ``s`` is also a unit ("wait 30s": seconds), and the
words before decide which it is.
"""

from __future__ import annotations

import re

from tts_container.text.normalization import context, numbers
from tts_container.text.normalization.scanner import Piece, Rule

_DECADE = re.compile(
    r"(?<![\w.,])(?:(?P<mark>['’])(?P<short>\d0)|(?P<full>\d{1,4}0|1(?:0{1,2})?(?:,000)+))(?:['’]?s)(?!\w)"
)
# "10s of", "1,000s of birds": a round number in the plural is a count of them ("tens", "thousands").
_PLURAL_COUNTS = {"10": "tens", "100": "hundreds", "1000": "thousands", "10000": "tens of thousands"}
_PLURAL_COUNTS |= {"100000": "hundreds of thousands", "1000000": "millions"}
# Before "30s" these make it thirty seconds, not the thirties.
_SECONDS_CUES = frozenset(
    {
        "wait",
        "for",
        "every",
        "after",
        "takes",
        "took",
        "within",
        "about",
        "under",
        "only",
        "to",
        "of",
        "in",
        "at",
    }
    | {"than", "last", "lasts", "per", "each", "timeout", "delay", "interval"}
)
_DECADE_NAMES = {
    "1": "tens",
    "2": "twenties",
    "3": "thirties",
    "4": "forties",
    "5": "fifties",
    "6": "sixties",
}
_DECADE_NAMES |= {"7": "seventies", "8": "eighties", "9": "nineties", "0": "hundreds"}


def _decade(match: re.Match[str], british: bool) -> list[Piece] | None:
    digits = (match["short"] or match["full"]).replace(",", "")
    if digits in _PLURAL_COUNTS and (
        "," in match["full"]
        or context.word_after(match.string, match.end()) == "of"
        or (digits == "100" and context.word_before(match.string, match.start()).lower() == "the")
    ):
        return [Piece(match.start(), match.end(), _PLURAL_COUNTS[digits])]
    if len(digits) == 2:
        before = context.word_before(match.string, match.start()).lower()
        if not match["mark"] and (digits == "10" or before in _SECONDS_CUES):
            return None  # "wait 10s": seconds
        return [Piece(match.start(), match.end(), _DECADE_NAMES[digits[0]])]
    if len(digits) != 4:
        return None
    said = numbers.year(digits, british=british)
    last = said.rsplit(" ", 1)
    head = last[0] + " " if len(last) == 2 else ""
    word = last[-1]
    if word.endswith("y"):
        word = word[:-1] + "ies"
    elif word in ("six",):
        word += "es"
    else:
        word += "s"
    return [Piece(match.start(), match.end(), head + word)]


# "back in '08": a year by its last two digits ("oh eight", "ninety eight"); "'90s" is a decade.
_SHORT_YEAR = re.compile(r"(?<![\w'’])['’](?P<yy>\d\d)(?![\w'’]|[.,]\d)")


def _short_year(match: re.Match[str], british: bool) -> list[Piece]:
    yy = match["yy"]
    said = "oh " + numbers.cardinal(yy[1]) if yy[0] == "0" else numbers.cardinal(yy, british=british)
    return [Piece(match.start(), match.end(), said)]


RULES = (
    Rule("decade", _DECADE, _decade),
    Rule("short_year", _SHORT_YEAR, _short_year),
)
