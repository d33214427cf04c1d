"""Rules for clock times and dates: "3:45 pm", "15:30", "10am", "March 3rd", "3/4/2025", "2025-03-04".

American English says the month first ("March fourth, twenty twenty five") and reads 3/4/2025 as March 4;
British English says "the fourth of March" and reads 3/4/2025 as 3 April. A date written with dots
(04.03.2025) is day first in both.
"""

from __future__ import annotations

import re

from tts_container.text.normalization import context, numbers, time_range_rules
from tts_container.text.normalization.scanner import Piece, Rule
from tts_container.text.normalization.tables import MONTH_NAMES, MONTHS

_AMPM = r"(?P<ampm>[AaPp])\.?\s?[Mm]\.?(?![\w])"
_TIME = re.compile(
    rf"(?<![\w:.,])(?P<h>[01]?\d|2[0-4]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?"
    rf"(?:(?P<space>\s?){_AMPM})?(?![\w]|:\d|[.,]\d)"
)
_HOUR_AMPM = re.compile(rf"(?<![\w:.,])(?P<h>1[0-2]|0?[1-9])(?P<space>\s?){_AMPM}")
_TIME_RANGE_HOURS = re.compile(
    rf"(?<![\w:.,])(?P<h1>1[0-2]|0?[1-9])(?::(?P<m1>[0-5]\d))?\s?[-–]\s?"
    rf"(?P<h2>1[0-2]|0?[1-9])(?::(?P<m2>[0-5]\d))?(?P<space>\s?){_AMPM}"
)


def _clock(hour: int, minute: int, has_ampm: bool, british: bool) -> str:
    """ "three forty five", "three oh five", "three o'clock", "fifteen hundred" (24 h, on the hour)."""
    if minute == 0:
        if has_ampm:
            return numbers.cardinal(hour, british=british)
        if hour == 0:
            return "midnight"
        if hour > 12:
            return f"{numbers.cardinal(hour, british=british)} hundred"
        return f"{numbers.cardinal(hour, british=british)} o'clock"
    minutes = numbers.cardinal(minute, british=british)
    if minute < 10:
        minutes = "oh " + minutes
    return f"{numbers.cardinal(hour, british=british)} {minutes}"


def _two_digits(value: int, british: bool) -> str:
    """Minutes or seconds of a race time: "oh oh", "oh nine", "thirty five"."""
    if value == 0:
        return "oh oh"
    return ("oh " if value < 10 else "") + numbers.cardinal(value, british=british)


_TIME_OF_DAY_CUES = frozenset({"at", "since", "until", "till", "from", "by", "before", "after"})


def _ampm(match: re.Match[str]) -> str:
    return "A M" if match["ampm"].lower() == "a" else "P M"


def _period_after(match: re.Match[str]) -> str:
    """ "p.m." at the end of a sentence also ends it: keep that period in what is spoken."""
    text, end = match.string, match.end()
    return "." if text[end - 1] == "." and context.ends_sentence(text, end) else ""


def _time(match: re.Match[str], british: bool) -> list[Piece] | None:
    hour, minute = int(match["h"]), int(match["m"])
    if hour == 24 and minute:
        return None
    has_ampm = match["ampm"] is not None
    if has_ampm and not 1 <= hour <= 12:
        return None
    spoken = _clock(hour, minute, has_ampm, british)
    if match["s"]:
        seconds = int(match["s"])
        said = numbers.cardinal(seconds, british=british)
        if has_ampm or context.word_before(match.string, match.start()).lower() in _TIME_OF_DAY_CUES:
            spoken += f" and {said} {'second' if seconds == 1 else 'seconds'}"
        else:  # a race or a video time, "ran 2:01:09": two oh one oh nine ("2:00:35": two oh oh thirty five)
            spoken = " ".join(_two_digits(n, british) for n in (minute, seconds))
            spoken = f"{numbers.cardinal(hour, british=british)} {spoken}"
    if not has_ampm:
        return [Piece(match.start(), match.end(), spoken)]
    if match["space"]:
        return [Piece(match.start(), match.end("s" if match["s"] else "m"), spoken), _ampm_piece(match)]
    return [Piece(match.start(), match.end(), f"{spoken} {_ampm(match)}{_period_after(match)}")]


def _ampm_piece(match: re.Match[str]) -> Piece:
    return Piece(match.start("ampm"), match.end(), _ampm(match) + _period_after(match))


def _hour_ampm(match: re.Match[str], british: bool) -> list[Piece]:
    hour = numbers.cardinal(int(match["h"]), british=british)
    if match["space"]:
        return [Piece(match.start(), match.end("h"), hour), _ampm_piece(match)]
    return [Piece(match.start(), match.end(), f"{hour} {_ampm(match)}{_period_after(match)}")]


def _time_range(match: re.Match[str], british: bool) -> list[Piece]:
    first = _clock(int(match["h1"]), int(match["m1"] or 0), True, british)
    second = _clock(int(match["h2"]), int(match["m2"] or 0), True, british)
    end_of_range = match.end("m2") if match["m2"] else match.end("h2")
    if match["space"]:
        return [Piece(match.start(), end_of_range, f"{first} to {second}"), _ampm_piece(match)]
    return [Piece(match.start(), match.end(), f"{first} to {second} {_ampm(match)}{_period_after(match)}")]


# --- durations: "1:52.85" (a swim), "11h 30m" ----------------------------------------------------------

_SPLIT_TIME = re.compile(r"(?<![\w:.,])(?P<m>\d{1,2}):(?P<s>[0-5]\d)\.(?P<f>\d{1,3})(?![\w]|[.,:]\d)")
_UNITS_DURATION = re.compile(
    r"(?<![\w:.,])(?:(?P<h>\d{1,3})h\s?(?P<m>\d{1,2})m(?:in)?(?:\s?(?P<s>\d{1,2})s)?"
    r"|(?P<m2>\d{1,2})m(?:in)?\s?(?P<s2>\d{1,2})s)(?![\w])"
)


def _count(value: str, unit: str, british: bool) -> str:
    return f"{numbers.cardinal(int(value), british=british)} {unit}{'' if int(value) == 1 else 's'}"


def _split_time(match: re.Match[str], british: bool) -> list[Piece]:
    """Minutes, seconds and hundredths: "1:52.85" is one minute fifty two point eight five seconds."""
    seconds = numbers.decimal(f"{int(match['s'])}.{match['f']}", british=british)
    said = f"{_count(match['m'], 'minute', british)} {seconds} seconds"
    return [Piece(match.start(), match.end(), said)]


def _units_duration(match: re.Match[str], british: bool) -> list[Piece]:
    """ "11h 30m", "1h30m", "5m 30s": two parts or more (alone, "30m" is thirty meters)."""
    units = (("h", "hour"), ("m", "minute"), ("s", "second"), ("m2", "minute"), ("s2", "second"))
    parts = [(match[g], unit) for g, unit in units if match[g]]
    said = " ".join(_count(value, unit, british) for value, unit in parts)
    return [Piece(match.start(), match.end(), said)]


# --- dates ------------------------------------------------------------------------------------------


def _date(year: int | None, month: int, day: int, british: bool, *, after_the: bool = False) -> str | None:
    """A date in words; British "the third of April" (without its "the" after one: "by the 3/4/2025")."""
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    name = MONTH_NAMES[month - 1]
    said_day = numbers.ordinal(day, british=british)
    said = f"{'' if after_the else 'the '}{said_day} of {name}" if british else f"{name} {said_day}"
    if year is not None:
        said += (
            f" {numbers.year(year, british=british)}"
            if british
            else f", {numbers.year(year, british=british)}"
        )
    return said


def _after_the(match: re.Match[str]) -> bool:
    return context.word_before(match.string, match.start()).lower() == "the"


_ISO_DATE = re.compile(
    r"(?<![\w.\-/])(?P<y>\d{4})(?P<sep>[-/.])(?P<m>\d{1,2})(?P<sep2>[-/.])(?P<d>\d{1,2})(?![\w]|[-/]\d|[.:]\d)"
)


def _iso_date(match: re.Match[str], british: bool) -> list[Piece] | None:
    """ "2025-03-04" (also with slashes or dots, year first)."""
    if match["sep"] != match["sep2"]:
        return None
    said = _date(int(match["y"]), int(match["m"]), int(match["d"]), british, after_the=_after_the(match))
    return None if said is None else [Piece(match.start(), match.end(), said)]


# "2026-12-01T14:05:09+00:00" (ISO 8601, RFC 3339): the date, the clock, the zone ("UTC", "UTC minus five").
_ISO_DATETIME = re.compile(
    r"(?<![\w.\-/])(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>[01]\d|2[0-3]):(?P<mi>[0-5]\d)"
    r"(?::(?P<s>[0-5]\d)(?:\.\d+)?)?(?P<zone>Z|[+\-−](?P<zh>[01]\d|2[0-3]):?(?P<zm>[0-5]\d))?(?![\w:+\-]|\.\d)"
)


def _iso_datetime(match: re.Match[str], british: bool) -> list[Piece] | None:
    said = _date(int(match["y"]), int(match["mo"]), int(match["d"]), british, after_the=_after_the(match))
    if said is None:
        return None
    said += ", " + _clock(int(match["h"]), int(match["mi"]), False, british)
    if match["s"] and (seconds := int(match["s"])):
        said += f" and {numbers.cardinal(seconds, british=british)} second{'' if seconds == 1 else 's'}"
    if match["zone"] == "Z" or (match["zone"] and int(match["zh"]) == int(match["zm"]) == 0):
        said += " U T C"
    elif match["zone"]:
        sign = "plus" if match["zone"][0] == "+" else "minus"
        offset = numbers.cardinal(int(match["zh"]), british=british)
        if int(match["zm"]):
            offset += " " + numbers.cardinal(int(match["zm"]), british=british)
        said += f" U T C {sign} {offset}"
    return [Piece(match.start(), match.end(), said)]


_NUMERIC_DATE = re.compile(
    r"(?<![\w.\-/])(?P<a>\d{1,2})(?P<sep>[/.\-])(?P<b>\d{1,2})(?P<sep2>[/.\-])(?P<y>\d{4}|\d{2})(?![\w]|[/.\-]\d)"
)


def _numeric_date(match: re.Match[str], british: bool) -> list[Piece] | None:
    if match["sep"] != match["sep2"]:
        return None
    first, second = int(match["a"]), int(match["b"])
    day_first = british or match["sep"] == "."
    if first > 12:
        day_first = True
    elif second > 12:
        day_first = False
    day, month = (first, second) if day_first else (second, first)
    year = int(match["y"])
    if len(match["y"]) == 2:
        year += 2000 if year <= 40 else 1900
    said = _date(year, month, day, british, after_the=_after_the(match))
    return None if said is None else [Piece(match.start(), match.end(), said)]


_MONTH_SLASH_DAY = re.compile(r"(?<![\w.\-/])(?P<a>\d{1,2})/(?P<b>\d{1,2})(?![\w]|[/.\-]\d|\.\d|/)")
# Before "12/25" these make it a date, not a fraction ("on 12/25", "ends 11/30"; "3/4 cup" stays a fraction,
# and so does "from 1/3 to 1/2": "from", "before" and "after" come before fractions as often).
_DATE_CUES = frozenset(
    {"on", "by", "until", "till", "through", "thru", "ends", "ending", "since", "due", "starting", "starts"}
    | {"effective", "expires", "dated"}
)


_CARD = re.compile(r"\b(?:card|exp|expiry|expiration|expires|valid thru|valid through)\b", re.IGNORECASE)


def _card_digits(written: str, british: bool) -> str:
    """A month or year of a card's expiry: "05" is "oh five", "26" "twenty six"."""
    if written.startswith("0") and len(written) == 2:
        return "oh " + numbers.cardinal(written[1], british=british)
    return numbers.cardinal(written, british=british)


# Parts of a whole people write with these denominators ("3/16 inch", "5/32"), so they stay fractions.
_FRACTION_DENOMINATORS = frozenset({16, 32, 64, 100})
_PART_OF = re.compile(r"\s*(?:-\s*)?(?:of\b|inch|in\b|in\.|\"|mile|cup|oz\b|lb\b|th\b)")


# Two numbers people write with a slash that are not dates: "24/7", a 16/9 screen, 22/7 for pi.
_NOT_DATES = frozenset({(24, 7), (16, 9), (22, 7)})


def _only_a_date(match: re.Match[str], day: int, month: int) -> bool:
    """ "Her birthday is 11/22" (22/11 in Britain): a day of 13 or more is no month, so next to a month
    it is a date, unless a measure follows ("5/32 of", "3/16 inch") or it is a fraction's denominator
    (16, 32, 64, 100), or a pair such as 24/7."""
    first, second = int(match["a"]), int(match["b"])
    return (
        13 <= day <= 31
        and 1 <= month <= 12
        and (first, second) not in _NOT_DATES
        and second not in _FRACTION_DENOMINATORS
        and not _PART_OF.match(match.string, match.end())
    )


def _month_slash_day(match: re.Match[str], british: bool) -> list[Piece] | None:
    before = match.string[max(0, match.start() - context.WINDOW) : match.start()]
    if match["a"].startswith("0") and int(match["a"]) <= 12 and _CARD.search(before):
        # a card's expiry, month and year: "valid through 05/26" is "oh five, twenty six"
        expiry = f"{_card_digits(match['a'], british)}, {_card_digits(match['b'], british)}"
        return [Piece(match.start(), match.end(), expiry)]
    first, second = int(match["a"]), int(match["b"])
    day, month = (first, second) if british else (second, first)
    cue, cue_start = context.previous_word(match.string, match.start())
    if cue.lower() == "the":  # "on the 12/25"
        cue = context.word_before(match.string, cue_start)
    if cue.lower().rstrip(":") not in _DATE_CUES and not _only_a_date(match, day, month):
        if (first, second) == (9, 11):
            return [Piece(match.start(), match.end(), "nine eleven")]  # the day's name, not a fraction
        return None
    said = _date(None, month, day, british, after_the=_after_the(match))
    return None if said is None else [Piece(match.start(), match.end(), said)]


_MONTH = "|".join(sorted((m.capitalize() for m in MONTHS), key=len, reverse=True))
_MONTH_DAY = re.compile(
    rf"(?<![\w])(?P<month>{_MONTH})(?P<dot>\.)?(?P<gap>\s+)(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
    rf"(?:\s?[-–]\s?(?P<day2>[0-3]?\d)(?:st|nd|rd|th)?)?(?![\w:]|[.,]\d)"
    rf"(?:(?P<comma>,?\s+)(?P<year>\d{{4}})(?![\w]|[.,]\d))?"
)
_DAY_MONTH = re.compile(
    rf"(?<![\w.,])(?P<day>[0-3]?\d)(?:st|nd|rd|th)?(?P<gap>\s+)(?P<of>of\s+)?(?P<month>{_MONTH})(?P<dot>\.)?"
    rf"(?![\w])(?:(?P<comma>,?\s+)(?P<year>\d{{4}})(?![\w]|[.,]\d))?"
)
_MONTH_YEAR = re.compile(rf"(?<![\w])(?P<month>{_MONTH})(?P<dot>\.)?\s+(?P<year>\d{{4}})(?![\w]|[.,]\d)")


def _month_piece(match: re.Match[str]) -> Piece:
    """The month's full name; the period of "Jan." goes with it unless it also ends the sentence."""
    written = match["month"]
    said = MONTHS[written.lower()]
    abbreviated = said != written
    if match["dot"] and abbreviated and not context.ends_sentence(match.string, match.end("dot")):
        return Piece(match.start("month"), match.end("dot"), said)
    return Piece(match.start("month"), match.end("month"), said)


def _month_day(match: re.Match[str], british: bool) -> list[Piece] | None:
    day = int(match["day"])
    if not 1 <= day <= 31:
        return None
    said = numbers.ordinal(day, british=british)
    day_end = match.end("day2") if match["day2"] else match.end("day")
    day_end = _after_suffix(match.string, day_end)
    if match["day2"]:
        said += f" to {numbers.ordinal(int(match['day2']), british=british)}"
    pieces = [_month_piece(match), Piece(match.start("day"), day_end, said)]
    if match["year"]:
        pieces.append(
            Piece(match.start("year"), match.end("year"), numbers.year(match["year"], british=british))
        )
    return pieces


def _after_suffix(text: str, end: int) -> int:
    """Past an ordinal suffix ("3rd") that the pattern read but did not group."""
    while end < len(text) and text[end].isalpha():
        end += 1
    return end


def _day_month(match: re.Match[str], british: bool) -> list[Piece] | None:
    day = int(match["day"])
    if not 1 <= day <= 31:
        return None
    before = context.word_before(match.string, match.start()).lower()
    said = ("" if before == "the" else "the ") + numbers.ordinal(day, british=british)
    if not match["of"]:
        said += " of"
    day_end = _after_suffix(match.string, match.end("day"))
    pieces = [Piece(match.start("day"), day_end, said), _month_piece(match)]
    if match["year"]:
        pieces.append(
            Piece(match.start("year"), match.end("year"), numbers.year(match["year"], british=british))
        )
    return pieces


def _month_year(match: re.Match[str], british: bool) -> list[Piece]:
    return [
        _month_piece(match),
        Piece(match.start("year"), match.end("year"), numbers.year(match["year"], british=british)),
    ]


RULES = (
    *time_range_rules.RULES,
    Rule("iso_datetime", _ISO_DATETIME, _iso_datetime),
    Rule("iso_date", _ISO_DATE, _iso_date),
    Rule("numeric_date", _NUMERIC_DATE, _numeric_date),
    Rule("month_slash_day", _MONTH_SLASH_DAY, _month_slash_day),
    Rule("split_time", _SPLIT_TIME, _split_time),
    Rule("units_duration", _UNITS_DURATION, _units_duration),
    Rule("time_range", _TIME_RANGE_HOURS, _time_range),
    Rule("time", _TIME, _time),
    Rule("hour_ampm", _HOUR_AMPM, _hour_ampm),
    Rule("month_day", _MONTH_DAY, _month_day),
    Rule("day_month", _DAY_MONTH, _day_month),
    Rule("month_year", _MONTH_YEAR, _month_year),
)
