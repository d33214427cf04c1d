"""The dash between two times is "to": "9am-5pm", "9:30-10:30", "noon-6 pm", "9am-noon".

Tried before every other time and date rule: without them "noon-6" would be read as a code such as
"COVID-19", and the dash in "9am-5pm" as a minus or a hyphen.
"""

from __future__ import annotations

import re

from tts_container.text.normalization.scanner import Piece, Rule

_DASH_BETWEEN_CLOCKS = re.compile(r"(?<=\d:[0-5]\d)\s?[-–]\s?(?=(?:[01]?\d|2[0-4]):[0-5]\d)")
_DASH_BETWEEN_TIMES = re.compile(
    r"(?:(?<=[Mm])|(?<=\d)|(?<=[Mm]\.))(?<![\d.,]\d\d\d)\s?[-–]\s?"
    r"(?=(?:1[0-2]|0?[1-9])(?::[0-5]\d)?\s?[AaPp]\.?\s?[Mm]\b)"
)
_NOON_RANGE = re.compile(
    r"(?<![\w])(?P<word>noon|midnight)\s?[-–]\s?"
    r"(?=(?:1[0-2]|0?[1-9])(?::[0-5]\d)?\s?(?:[AaPp]\.?\s?[Mm]\b|\s*$|\s*[,.;]))"
    r"|(?<=[\dMm.])\s?[-–]\s?(?=(?:noon|midnight)\b)"
)
# What the text before such a dash ends with when it is a time: "am", "9:30", or an hour.
_A_TIME_BEFORE = re.compile(r"(?:[AaPp]\.?\s?[Mm]\.?|\d:[0-5]\d|\d)$")
_TO = " to "


def _after_a_time(match: re.Match[str]) -> bool:
    return (
        _A_TIME_BEFORE.search(match.string[max(0, match.start() - 16) : match.start()].rstrip()) is not None
    )


def _dash_between_clocks(match: re.Match[str], british: bool) -> list[Piece]:
    return [Piece(match.start(), match.end(), _TO)]


def _dash_between_times(match: re.Match[str], british: bool) -> list[Piece] | None:
    """ "9am-5pm", "9:00 am - 5:00 pm"."""
    return [Piece(match.start(), match.end(), _TO)] if _after_a_time(match) else None


def _noon_range(match: re.Match[str], british: bool) -> list[Piece] | None:
    """ "noon-6 pm", "9am-noon"."""
    if match["word"]:
        return [Piece(match.start(), match.end(), f"{match['word']}{_TO}")]
    return [Piece(match.start(), match.end(), _TO)] if _after_a_time(match) else None


RULES = (
    Rule("noon_range", _NOON_RANGE, _noon_range),
    Rule("dash_between_times", _DASH_BETWEEN_TIMES, _dash_between_times),
    Rule("dash_between_clocks", _DASH_BETWEEN_CLOCKS, _dash_between_clocks),
)
