"""Rules for numbers: ranges, ordinals, fractions, versions, plain numbers, and the order of all number
rules (money and measures are in :mod:`.amount_rules`, decades and short years in :mod:`.plural_rules`).

Every pattern starts where no word character stands before it, so "COVID19" or "x86" are not cut into
a word and a number by accident (:mod:`.word_rules` reads those letter-digit codes as a whole).
"""

from __future__ import annotations

import re

from tts_container.text.normalization import amount_rules, context, measures, numbers, plural_rules
from tts_container.text.normalization.patterns import NUM, START, UNIT, piece
from tts_container.text.normalization.scanner import Piece, Rule
from tts_container.text.normalization.tables import (
    DIGIT_CUES,
    ERA_SUFFIXES,
    MONTHS,
    PAIRED_CUES,
    US_STATES,
    VERSION_CUES,
    VULGAR_FRACTIONS,
    YEAR_CUES,
)
from tts_container.text.normalization.unit_tables import ATTACHED_ONLY, MAGNITUDES, SPACED_ONLY, UNITS

_VULGAR = "".join(VULGAR_FRACTIONS)


# --- ranges, scores, ratios -------------------------------------------------------------------------

_RANGE = re.compile(
    rf"{START}(?P<a>{NUM})(?P<sep>\s?[-–—]\s?)(?P<b>{NUM})(?![\w]|[.,]\d|[-–]\d)"
    rf"(?:(?P<space>\s?)(?P<unit>{UNIT})(?:/(?P<per>{UNIT}))?(?![\w°²³/]))?"
)


_TOLL_FREE_AREAS = {"800": "eight hundred", "888": "eight eight eight", "877": "eight seven seven"}
_TOLL_FREE_AREAS |= {"866": "eight six six", "855": "eight five five", "844": "eight four four"}


def _is_year(text: str) -> bool:
    return len(text) == 4 and text.isdecimal() and 1000 <= int(text) <= 2099


def _range(match: re.Match[str], british: bool) -> list[Piece] | None:
    low, high = match["a"], match["b"]
    if _is_year(low) and (_is_year(high) or (len(high) == 2 and high.isdecimal())):
        spoken = f"{numbers.year(low, british=british)} to "
        spoken += (
            numbers.year(high, british=british) if len(high) == 4 else numbers.cardinal(high, british=british)
        )
        return [Piece(match.start(), match.end("b"), spoken)]
    symbol = match["unit"]
    if (
        symbol
        and symbol in ATTACHED_ONLY
        and match["space"]
        and context.word_follows(match.string, match.end())
    ):
        symbol = None
    joiner = "to"
    if (
        low == "1"
        and high in _TOLL_FREE_AREAS
        and context.word_after(match.string, match.end("b")).rstrip(".,;:!?") == "number"
    ):
        return [Piece(match.start(), match.end("b"), f"one {_TOLL_FREE_AREAS[high]}")]  # "a 1-800 number"
    if low == high == "50" and not symbol:
        return [Piece(match.start(), match.end("b"), "fifty fifty")]  # the idiom; a 1-1 score is "one to one"
    if (
        match["sep"].startswith(" ")
        and match["sep"].endswith(" ")
        and "=" in match.string[match.end() : match.end() + context.WINDOW]
    ):
        joiner = "minus"  # "10 - 4 = 6"
    spoken = f"{numbers.number(low, british=british)} {joiner} {numbers.number(high, british=british)}"
    if not symbol:
        return [Piece(match.start(), match.end("b"), spoken)]
    name = measures.unit(symbol, high)
    if match["per"]:  # "70-99 mg/dL"
        name += " per " + UNITS[match["per"]][0]
    if match["space"]:
        return [Piece(match.start(), match.end("b"), spoken), Piece(match.start("unit"), match.end(), name)]
    return [Piece(match.start(), match.end(), f"{spoken} {name}")]


_DASH_AFTER_PERCENT = re.compile(r"(?<=\d%)\s?[-–—]\s?(?=[-−]?\d)")


def _dash_after_percent(match: re.Match[str], british: bool) -> list[Piece]:
    """The dash of "50%–85%" is "to"."""
    return [Piece(match.start(), match.end(), " to ")]


_RATIO = re.compile(rf"{START}(?P<a>\d+):(?P<b>\d+)(?![\w:]|[.,]\d)")


def _ratio(match: re.Match[str], british: bool) -> list[Piece]:
    spoken = (
        f"{numbers.cardinal(match['a'], british=british)} to {numbers.cardinal(match['b'], british=british)}"
    )
    return [Piece(match.start(), match.end(), spoken)]


# --- ordinals, decades, fractions -------------------------------------------------------------------

_ORDINAL = re.compile(r"(?<![\w.,])(?P<n>\d{1,3}(?:,\d{3})+|\d+)(?:st|nd|rd|th|ST|ND|RD|TH)(?!\w)")


def _ordinal(match: re.Match[str], british: bool) -> list[Piece]:
    return [Piece(match.start(), match.end(), numbers.ordinal(match["n"], british=british))]


_FRACTION = re.compile(rf"{START}(?:(?P<whole>\d+)(?P<space>\s+))?(?P<n>\d+)/(?P<d>\d+)(?![\w/]|[.,]\d)")
_RATING = re.compile(rf"{START}(?P<n>\d+\.\d+|\d+)/(?P<d>10|5|100)(?![\w/]|[.,]\d)")
_VULGAR_FRACTION = re.compile(rf"(?<![\w.,])(?P<whole>\d+)?\s?(?P<v>[{_VULGAR}])")


# Nouns of one measured thing: "3/4 cup" is three quarters of a cup.
_ONE_OF = frozenset(
    {"cup", "teaspoon", "tablespoon", "inch", "mile", "pound", "ounce", "hour", "gallon", "liter", "litre"}
    | {"stick", "pint", "quart", "foot", "meter", "metre", "kilometer", "kilogram", "second", "minute"}
)


def _one_of(match: re.Match[str]) -> tuple[str, bool] | None:
    """The noun of one measured thing after a part of it ("3/4 cup", "½ hour"), and whether the
    part is its adjective ("a 3/4-inch bolt"); None when no such noun follows."""
    text, end = match.string, match.end()
    hyphen = text[end : end + 1] == "-"
    noun = re.match(r"[A-Za-z]+", text[end + 1 :]) if hyphen else None
    word = noun[0] if noun else context.word_after(text, end).rstrip(".,;:!?")
    if word not in _ONE_OF:
        return None
    if not hyphen and word in _SPANS:  # "5/8 inch strips", "a 1/2 mile walk": the span is an adjective
        after = context.word_after(text, text.index(word, end) + len(word)).rstrip(".,;:!?")
        hyphen = after.isalpha() and after.islower() and after not in _NOT_A_NOUN
    return word, hyphen


_SPANS = frozenset({"inch", "foot", "mile", "meter", "metre", "kilometer", "hour", "minute", "second"})
_NOT_A_NOUN = frozenset({"of", "and", "or", "to", "from", "in", "on", "at", "away", "long", "wide", "thick"})
_NOT_A_NOUN |= {"deep", "high", "tall", "later", "ago", "before", "after", "each", "per", "is", "was"}
_PRESSURE = re.compile(r"\s?mmHg\b|\s+(?:blood\s+)?pressure\b")
_PRESSURE_BEFORE = re.compile(r"(?:pressure|BP)(?:\s+\w+){0,2}\s*$")


def _fraction(match: re.Match[str], british: bool) -> list[Piece] | None:
    top, bottom = int(match["n"]), int(match["d"])
    if bottom == 0:
        return None
    text = match.string
    before = text[max(0, match.start() - context.WINDOW) : match.start()]  # a window: never the whole text
    # "120/80 mmHg", "a blood pressure of 120/80": one hundred twenty over eighty
    if not match["whole"] and (_PRESSURE.match(text, match.end()) or _PRESSURE_BEFORE.search(before)):
        spoken = f"{numbers.cardinal(top, british=british)} over {numbers.cardinal(bottom, british=british)}"
        return [Piece(match.start(), match.end(), spoken)]
    if top >= bottom or bottom > 100:  # "24/7", "50/50": two numbers, not a part
        if match["whole"]:
            return None
        spoken = f"{numbers.cardinal(top, british=british)} {numbers.cardinal(bottom, british=british)}"
        return [Piece(match.start(), match.end(), spoken)]
    part = numbers.fraction(top, bottom, british=british)
    if not match["whole"] and (noun := _one_of(match)) is not None:
        part = numbers.part_of(top, bottom, noun[0], adjective=noun[1], british=british)
    if match["whole"]:
        if top == 1:
            part = "a " + part.split(" ", 1)[1]
        return [
            Piece(match.start(), match.end("whole"), numbers.cardinal(match["whole"], british=british)),
            Piece(match.start("n"), match.end(), f"and {part}"),
        ]
    return [Piece(match.start(), match.end(), part)]


_SCORE_CUES = frozenset({"score", "scored", "scores", "rated", "rating", "got", "gets", "get", "earned"})


def _rating(match: re.Match[str], british: bool) -> list[Piece] | None:
    """ "7.5/10" is "seven point five out of ten"; so is "scored 9/10" (otherwise a whole "3/10" stays a
    fraction, "three tenths")."""
    scored = context.word_before(match.string, match.start()).lower() in _SCORE_CUES
    if "." not in match["n"] and not scored:
        return None
    score, scale = numbers.number(match["n"], british=british), numbers.cardinal(match["d"], british=british)
    spoken = f"{score} out of {scale}"
    return [Piece(match.start(), match.end(), spoken)]


_SPACED_UNIT = re.compile(rf"\s(?P<unit>{UNIT})(?![\w°²³/])")


def _vulgar_fraction(match: re.Match[str], british: bool) -> list[Piece]:
    top, bottom = VULGAR_FRACTIONS[match["v"]]
    part = numbers.fraction(top, bottom, british=british)
    unit = _SPACED_UNIT.match(match.string, match.end())
    if unit and unit["unit"] in ATTACHED_ONLY | SPACED_ONLY:
        unit = None
    if not match["whole"] and unit:  # "¼ tsp": a quarter of a teaspoon
        name = UNITS[unit["unit"]][0]
        part = numbers.part_of(top, bottom, name, adjective=False, british=british)
        return [Piece(match.start(), match.end(), part), piece(unit, "unit", name)]
    if not match["whole"] and (noun := _one_of(match)) is not None:
        part = numbers.part_of(top, bottom, noun[0], adjective=noun[1], british=british)
    if match["whole"]:
        if top == 1:
            part = "a " + part.split(" ", 1)[1]
        part = f"{numbers.cardinal(match['whole'], british=british)} and {part}"
        if unit:  # "1½ tsp": one and a half teaspoons
            return [Piece(match.start(), match.end(), part), piece(unit, "unit", UNITS[unit["unit"]][1])]
    return [Piece(match.start(), match.end(), part)]


# --- versions and plain numbers ---------------------------------------------------------------------

_VERSION = re.compile(
    r"(?<![\w.])(?:(?P<v>[vV])(?P<num>\d+(?:\.\d+)*)|(?P<dotted>\d+(?:\.\d+){2,}))(?![\w]|\.\d)"
)


def _version(match: re.Match[str], british: bool) -> list[Piece]:
    if match["v"]:
        return [
            Piece(match.start(), match.end(), "version " + numbers.version(match["num"], british=british))
        ]
    return [Piece(match.start(), match.end(), numbers.version(match["dotted"], british=british))]


_MAGNITUDE_SUFFIX = re.compile(rf"{START}(?P<num>{NUM})(?P<mag>k|M|bn|mn|tn)(?![\w])")  # "B": "221B"


def _magnitude(match: re.Match[str], british: bool) -> list[Piece]:
    spoken = f"{numbers.number(match['num'], british=british)} {MAGNITUDES[match['mag']]}"
    return [Piece(match.start(), match.end(), spoken)]


_LINKS = frozenset({"is", "was", "are", "number", "no", "#"})
_AIRLINE = re.compile(r"[A-Z]{2}|[A-Z]\d|\d[A-Z]")  # an IATA code between "flight" and its number
_NUMBER = re.compile(rf"(?<![\w.,/:])(?P<sign>[-−+±](?=[\d.]))?(?P<num>{NUM})(?P<plus>\+)?(?![\w])")
_YEAR_AFTER = frozenset({*ERA_SUFFIXES, "election", "elections", "season", "census", "budget", "model"})


def _number(match: re.Match[str], british: bool) -> list[Piece] | None:
    text, written = match.string, match["num"]
    sign = match["sign"]
    before, before_start = context.previous_word(text, match.start())
    if sign in ("-", "−") and not context.negative_allowed(text, match.start()):
        return None
    cue = before.lower().rstrip(".:")
    if cue in _LINKS or _AIRLINE.fullmatch(before):  # "my PIN is 4321", "Flight UA 857"
        linked, linked_start = context.previous_word(text, before_start)
        cue = linked.lower().rstrip(".:")
        if cue == "number":  # "the emergency number is 112"
            cue = context.word_before(text, linked_start).lower().rstrip(".:")
    zip_code = before.rstrip(",") in US_STATES and len(written) == 5  # "Washington, DC 20500"
    if written.isdecimal() and (cue in DIGIT_CUES or zip_code):
        spoken = numbers.digits(written)
    elif (
        written.isdecimal()
        and len(written) in (3, 4)
        and (cue in PAIRED_CUES or _paired_by_what_follows(text, written, match.end()))
    ):
        spoken = numbers.paired(written, british=british)
    elif "." in written and written[0] != "." and _is_version_context(before):
        spoken = numbers.version(written, british=british)
    elif written.isdecimal() and len(written) > 1 and written.startswith("0"):
        spoken = numbers.digits(written)
    elif (
        _is_year(written)
        and not sign
        and not match["plus"]
        and _reads_as_year(text, written, match.end(), before)
    ):
        spoken = numbers.year(written, british=british)
    else:
        spoken = numbers.number(written, british=british)
    if sign in ("-", "−"):
        spoken = "minus " + spoken
    elif sign == "+":
        spoken = "plus " + spoken
    elif sign == "±":
        spoken = "plus or minus " + spoken
    if match["plus"]:
        spoken += " plus"
    return [Piece(match.start(), match.end(), spoken)]


_STATUS_NOUNS = frozenset({"error", "errors", "status", "page"})
_JET_NOUNS = frozenset({"max", "dreamliner", "jet", "jets", "jetliner", "jetliners", "airliner", "airliners"})
_JET = re.compile(r"7[0-8]7")  # Boeing's 707 to 787


def _paired_by_what_follows(text: str, written: str, end: int) -> bool:
    """ "a 404 error", "the 500 status": a status code; "the 737 MAX", "a 787 Dreamliner": a Boeing
    jet; both said in pairs (four oh four, seven thirty seven)."""
    after = context.word_after(text, end).lower().rstrip(".,;:!?")
    return after in _STATUS_NOUNS or (after in _JET_NOUNS and _JET.fullmatch(written) is not None)


def _is_version_context(before: str) -> bool:
    word = before.lower().rstrip(":")
    return word in VERSION_CUES or (any(c.isdecimal() for c in word) and any(c.isalpha() for c in word))


_COUNT_CUES = frozenset({"about", "over", "under", "nearly", "almost", "than", "only", "just", "some", "all"})
_COUNTED = frozenset(
    {"people", "men", "women", "children", "feet", "times", "percent", "more", "fewer", "less"}
)
_NOT_PLURAL = frozenset({"is", "was", "has", "as", "its", "this", "us", "his", "thus", "yes", "plus", "less"})


def _reads_as_year(text: str, written: str, end: int, before: str) -> bool:
    """A four-digit number from 1000 to 2099 in running text is mostly a year ("nineteen ninety"); it is
    a count after "about", "over", ... or before a plural noun ("1500 people", "1200 calories"). A signed
    one ("-1500", "±1000", "1200+") is never a year; the caller checks that."""
    value = int(written)
    after = context.word_after(text, end)
    cue = before.lower().rstrip(".")
    if cue in YEAR_CUES or cue in MONTHS or after in _YEAR_AFTER or (value % 100 == 0 and value < 2000):
        return True  # "nineteen hundred" is both the year and the count
    if cue in _COUNT_CUES:
        return False
    noun = after.lower().rstrip(".")
    counted = noun in _COUNTED or (noun.endswith("s") and noun.isalpha() and noun not in _NOT_PLURAL)
    return not (after.islower() and counted)


_DIGITS_LEFT = re.compile(r"\d+")


def _digits_left(match: re.Match[str], british: bool) -> list[Piece]:
    """Digits no other rule took ("3,4", "a/5"): a number, so no digit ever reaches G2P."""
    return [Piece(match.start(), match.end(), numbers.cardinal(match.group(0), british=british))]


RULES = (
    *amount_rules.RULES_FIRST,
    *plural_rules.RULES,
    Rule("ordinal", _ORDINAL, _ordinal),
    Rule("range", _RANGE, _range),
    Rule("dash_after_percent", _DASH_AFTER_PERCENT, _dash_after_percent),
    amount_rules.MEASURE,
    Rule("rating", _RATING, _rating),
    Rule("fraction", _FRACTION, _fraction),
    Rule("vulgar_fraction", _VULGAR_FRACTION, _vulgar_fraction),
    Rule("version", _VERSION, _version),
    Rule("magnitude", _MAGNITUDE_SUFFIX, _magnitude),
    Rule("ratio", _RATIO, _ratio),
    Rule("number", _NUMBER, _number),
)
FALLBACK_RULES = (Rule("digits_left", _DIGITS_LEFT, _digits_left),)
