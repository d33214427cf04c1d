"""Rules for numbers: money, measures, ranges, ordinals, decades, fractions, versions, plain numbers.

Every pattern starts where no word character stands before it, so "COVID19" or "x86" are not cut into
a word and a number by accident (:mod:`.word_rules` reads those letter-digit codes as a whole).
"""

from __future__ import annotations

import re

from tts_container.normalization import context, measures, numbers
from tts_container.normalization.scanner import Piece, Rule, alternation
from tts_container.normalization.tables import (
    ATTACHED_ONLY,
    CENT_SIGNS,
    CURRENCY_CODES,
    CURRENCY_SYMBOLS,
    DIGIT_CUES,
    ERA_SUFFIXES,
    INCH,
    MAGNITUDES,
    MONTHS,
    PAIRED_CUES,
    UNITS,
    VERSION_CUES,
    VULGAR_FRACTIONS,
    YEAR_CUES,
)

NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
_START = r"(?<![\w.,/:\-−])"  # not inside a word, a number, a path or a time
_END = r"(?![\w]|[.,]\d)"  # not followed by more of a word or number


_UNIT = alternation(UNITS)
_SYMBOL = alternation(CURRENCY_SYMBOLS)
_CODE = alternation(CURRENCY_CODES)
_MAGNITUDE = r"thousand|million|billion|trillion|bn|mn|tn|[kKmMbBT]"
_VULGAR = "".join(VULGAR_FRACTIONS)
_AMOUNT = rf"(?:\d+\s+\d+/\d+|\d+/\d+|{NUM})"


def _piece(match: re.Match[str], group: str | int, spoken: str) -> Piece:
    return Piece(match.start(group), match.end(group), spoken)


# --- money ------------------------------------------------------------------------------------------

_MONEY = re.compile(
    rf"(?<![\w])(?P<sym>{_SYMBOL})\s?(?P<amt>{NUM})(?:(?P<attached>(?:{_MAGNITUDE}))(?![\w])"
    rf"|(?P<space>\s)(?P<word>thousand|million|billion|trillion)\b)?"
    rf"(?:\s?(?P<dash>[-–—]|to)\s?(?:{_SYMBOL})?(?P<amt2>{NUM})(?P<mag2>{_MAGNITUDE})?(?![\w]))?"
    rf"(?:/(?P<per>[A-Za-z]{{1,12}}))?(?![\w])"
)
_PER = {"hr": "hour", "h": "hour", "wk": "week", "mo": "month", "yr": "year", "kg": "kilogram", "lb": "pound"}


def _money(match: re.Match[str], british: bool) -> list[Piece]:
    names = CURRENCY_SYMBOLS[match["sym"]]
    if _before_a_noun(match.string, match.start(), match.end()) and not match["amt2"]:
        names = (names[0], names[0], names[2], names[3])  # "a $5 bill": a five dollar bill
    per = f" per {_PER.get(match['per'], match['per'])}" if match["per"] else ""
    if match["amt2"]:
        low = numbers.number(match["amt"], british=british)
        magnitude = match["mag2"] or match["attached"]
        low += f" {MAGNITUDES[match['attached']]}" if match["attached"] else ""
        high = measures.money(match["amt2"], names, magnitude, british)
        return [Piece(match.start(), match.end(), f"{low} to {high}{per}")]
    if match["word"]:
        return [
            Piece(match.start(), match.end("amt"), numbers.number(match["amt"], british=british)),
            _piece(match, "word", f"{match['word']} {names[1]}{per}"),
        ]
    return [
        Piece(
            match.start(), match.end(), measures.money(match["amt"], names, match["attached"], british) + per
        )
    ]


_MONEY_AFTER = re.compile(
    rf"{_START}(?P<amt>{NUM})(?P<mag>{_MAGNITUDE})?(?P<space>\s?)(?:(?P<sym>€|£|¥|\$|¢|p(?![\w]))|"
    rf"(?P<code>{_CODE})\b)"
)
_MONEY_CODE_FIRST = re.compile(rf"(?<![\w])(?P<code>{_CODE})\s?(?P<amt>{NUM})(?P<mag>{_MAGNITUDE})?(?![\w])")


_VIDEO_LINES = frozenset({"144", "240", "360", "480", "540", "720", "1080", "1440", "2160", "4320"})


def _money_after(match: re.Match[str], british: bool) -> list[Piece] | None:
    sign, written, magnitude = match["sym"], match["amt"], match["mag"]
    if sign in CENT_SIGNS:
        if magnitude or (sign == "p" and (match["space"] or written in _VIDEO_LINES)):
            return None
        one, many = CENT_SIGNS[sign]
        spoken = f"{numbers.number(written, british=british)} {one if numbers.is_one(written) else many}"
        return [Piece(match.start(), match.end(), spoken)]
    names = CURRENCY_SYMBOLS[sign] if sign else CURRENCY_CODES[match["code"]]
    cents = "." in written and len(written.rpartition(".")[2]) == 2
    if not match["space"] or cents:
        return [Piece(match.start(), match.end(), measures.money(written, names, magnitude, british))]
    spoken = numbers.number(written, british=british) + (f" {MAGNITUDES[magnitude]}" if magnitude else "")
    name = names[0] if numbers.is_one(written) and not magnitude else names[1]
    return [
        Piece(match.start(), match.end("space") - 1, spoken),
        Piece(match.end("space"), match.end(), name),
    ]


def _money_code_first(match: re.Match[str], british: bool) -> list[Piece]:
    words = measures.money(match["amt"], CURRENCY_CODES[match["code"]], match["mag"], british)
    return [Piece(match.start(), match.end(), words)]


# --- measures ---------------------------------------------------------------------------------------

_MEASURE = re.compile(
    rf"{_START}(?P<amt>[-−±+]?{_AMOUNT})(?:\s(?P<mag>thousand|million|billion|trillion))?(?P<hyphen>-)?"
    rf"(?P<space>\s?)(?P<unit>{_UNIT})"
    rf"(?:/(?P<per>{_UNIT}|hour|day|week|month|year|person))?(?![\w°²³/\-])(?P<dot>\.(?=\s+[a-z\d]))?"
)


def _measure(match: re.Match[str], british: bool) -> list[Piece] | None:
    symbol, space = match["unit"], match["space"]
    if symbol in ATTACHED_ONLY and space and _word_follows(match.string, match.end()):
        return None
    if (
        symbol == "x"
        and match.end() < len(match.string)
        and match.string[match.end() : match.end() + context.WINDOW].lstrip()[:1].isdecimal()
    ):
        return None  # "4 x 4" is a dimension
    written = match["amt"].replace("−", "-")
    if written.startswith(("-", "±", "+")) and not _negative_allowed(match.string, match.start()):
        return None
    sign = {"±": "plus or minus ", "+": "plus "}.get(written[0], "")
    written = written.lstrip("±+")
    amount = sign + measures.amount(written, british)
    adjective = bool(match["hyphen"]) or _before_a_noun(match.string, match.start(), match.end())
    name = measures.unit(symbol, "2" if match["mag"] else written, adjective=adjective)
    if match["per"]:
        per = match["per"]
        name += " per " + (UNITS[per][0] if per in UNITS else per)
    if match["mag"]:  # "149.6 million km": three written words
        return [
            _piece(match, "amt", amount),
            _piece(match, "mag", match["mag"]),
            Piece(match.start("unit"), match.end(), name),
        ]
    if space:
        return [_piece(match, "amt", amount), Piece(match.start("unit"), match.end(), name)]
    return [Piece(match.start(), match.end(), f"{amount} {name}")]


def _word_follows(text: str, end: int) -> bool:
    """Whether a word (not the end of the text or punctuation) comes next."""
    return text[end : end + context.WINDOW].lstrip()[:1].isalnum()


_DETERMINERS = frozenset(
    {"a", "an", "the", "this", "that", "our", "my", "your", "his", "her", "their", "its"}
)
_NOT_NOUNS = frozenset(
    {"of", "in", "on", "at", "to", "for", "and", "or", "per", "a", "an", "the", "is", "was"}
)


def _before_a_noun(text: str, start: int, end: int) -> bool:
    """ "a 5 km run": after "a"/"an" and before a noun the unit is an adjective, and singular."""
    if context.word_before(text, start).lower() not in _DETERMINERS:
        return False
    after = context.word_after(text, end).rstrip(".")
    return after.isalpha() and after.islower() and after not in _NOT_NOUNS


def _negative_allowed(text: str, start: int) -> bool:
    """A leading minus is a sign after a space, an opening bracket or the start, not after a word."""
    return start == 0 or text[start - 1].isspace() or text[start - 1] in "([{=<>~≈:"


# "in" is a unit attached ("12in"), with its period ("2 in. square"), at a sentence end, or before what
# measures take ("15 in screen", "12 in x 8 in"); otherwise it is the preposition ("5 in stock").
_INCHES = re.compile(
    rf"{_START}(?P<amt>{_AMOUNT})(?:(?P<attached>in(?:\.(?=\s+[a-z\d]))?|″|\")|(?P<space>\s)"
    rf"(?P<spaced>in\.(?=\s+[a-z\d])|in(?=\.(?:\s|$))|(?:in|inch(?:es)?)"
    rf"(?=\s*(?:$|[,;:!?)]|[x×]|by\b|wide|long|high|tall|thick|deep|screen|display|monitor))))(?!\w)"
)
_FEET_INCHES = re.compile(
    rf"{_START}(?P<ft>\d+)(?:\s?['′’]\s?(?P<in>\d{{1,2}}(?:\.\d+)?)\s?(?:\"|″|''|”)|['′’])(?![\w'])"
)


def _inches(match: re.Match[str], british: bool) -> list[Piece]:
    written = match["amt"]
    singular = numbers.is_one(written) or _before_a_noun(match.string, match.start(), match.end())
    name = INCH[0] if singular else INCH[1]
    amount = measures.amount(written, british)
    if match["space"]:
        return [_piece(match, "amt", amount), _piece(match, "spaced", name)]
    return [Piece(match.start(), match.end(), f"{amount} {name}")]


def _feet_inches(match: re.Match[str], british: bool) -> list[Piece] | None:
    if not match["in"] and match.string[match.end() : match.end() + 1] not in ("", " ", ",", "."):
        return None
    feet = f"{numbers.cardinal(match['ft'], british=british)} {'foot' if match['ft'] == '1' else 'feet'}"
    if match["in"]:
        inches = match["in"]
        feet += f" {numbers.number(inches, british=british)} {'inch' if inches == '1' else 'inches'}"
    return [Piece(match.start(), match.end(), feet)]


_DIMENSIONS = re.compile(
    rf"{_START}(?P<a>{NUM})\s?[x×]\s?(?P<b>{NUM})(?:\s?[x×]\s?(?P<c>{NUM}))?(?![\w]|\.\d)"
)


def _side(written: str, british: bool) -> str:
    """A side of a dimension; screen sizes are said in pairs: 1920x1080 "nineteen twenty by ten eighty"."""
    return (
        numbers.paired(written, british=british)
        if len(written) == 4 and written.isdecimal()
        else numbers.number(written, british=british)
    )


def _dimensions(match: re.Match[str], british: bool) -> list[Piece] | None:
    if "×" in match[0] and " " in match[0]:
        return None  # "2 × 3" is a product: the symbol rule says "times"
    sides = [_side(match[g], british) for g in ("a", "b", "c") if match[g]]
    return [Piece(match.start(), match.end(), " by ".join(sides))]


# --- ranges, scores, ratios -------------------------------------------------------------------------

_RANGE = re.compile(
    rf"{_START}(?P<a>{NUM})(?P<sep>\s?[-–—]\s?)(?P<b>{NUM})(?![\w]|[.,]\d|[-–]\d)"
    rf"(?:(?P<space>\s?)(?P<unit>{_UNIT})(?![\w°²³/]))?"
)


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
    if symbol and symbol in ATTACHED_ONLY and match["space"] and _word_follows(match.string, match.end()):
        symbol = None
    joiner = "to"
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
    if match["space"]:
        return [Piece(match.start(), match.end("b"), spoken), Piece(match.start("unit"), match.end(), name)]
    return [Piece(match.start(), match.end(), f"{spoken} {name}")]


_RATIO = re.compile(rf"{_START}(?P<a>\d+):(?P<b>\d+)(?![\w:]|[.,]\d)")


def _ratio(match: re.Match[str], british: bool) -> list[Piece]:
    spoken = (
        f"{numbers.cardinal(match['a'], british=british)} to {numbers.cardinal(match['b'], british=british)}"
    )
    return [Piece(match.start(), match.end(), spoken)]


# --- ordinals, decades, fractions -------------------------------------------------------------------

_ORDINAL = re.compile(r"(?<![\w.,])(?P<n>\d{1,3}(?:,\d{3})+|\d+)(?:st|nd|rd|th|ST|ND|RD|TH)(?!\w)")


def _ordinal(match: re.Match[str], british: bool) -> list[Piece]:
    return [Piece(match.start(), match.end(), numbers.ordinal(match["n"], british=british))]


_DECADE = re.compile(r"(?<![\w.,])(?:(?P<mark>['’])(?P<short>\d0)|(?P<full>\d{1,4}0))(?:['’]?s)(?!\w)")
# Before "30s" these make it thirty seconds, not the thirties.
_SECONDS_CUES = frozenset(
    {"wait", "for", "every", "after", "takes", "took", "within", "about", "under", "only"}
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
    digits = match["short"] or match["full"]
    if digits in ("100", "1000") and context.word_after(match.string, match.end()) == "of":
        return [Piece(match.start(), match.end(), "hundreds" if digits == "100" else "thousands")]
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


_FRACTION = re.compile(rf"{_START}(?:(?P<whole>\d+)(?P<space>\s+))?(?P<n>\d+)/(?P<d>\d+)(?![\w/]|[.,]\d)")
_RATING = re.compile(rf"{_START}(?P<n>\d+\.\d+|\d+)/(?P<d>10|5|100)(?![\w/]|[.,]\d)")
_VULGAR_FRACTION = re.compile(rf"(?<![\w.,])(?P<whole>\d+)?\s?(?P<v>[{_VULGAR}])")


def _fraction(match: re.Match[str], british: bool) -> list[Piece] | None:
    top, bottom = int(match["n"]), int(match["d"])
    if bottom == 0:
        return None
    if top >= bottom or bottom > 100:  # "24/7", "50/50": two numbers, not a part
        if match["whole"]:
            return None
        spoken = f"{numbers.cardinal(top, british=british)} {numbers.cardinal(bottom, british=british)}"
        return [Piece(match.start(), match.end(), spoken)]
    part = numbers.fraction(top, bottom, british=british)
    if match["whole"]:
        if top == 1:
            part = "a " + part.split(" ", 1)[1]
        return [
            Piece(match.start(), match.end("whole"), numbers.cardinal(match["whole"], british=british)),
            Piece(match.start("n"), match.end(), f"and {part}"),
        ]
    return [Piece(match.start(), match.end(), part)]


def _rating(match: re.Match[str], british: bool) -> list[Piece] | None:
    """ "7.5/10" is "seven point five out of ten" (a whole "3/10" stays a fraction, "three tenths")."""
    if "." not in match["n"]:
        return None
    score, scale = numbers.decimal(match["n"], british=british), numbers.cardinal(match["d"], british=british)
    spoken = f"{score} out of {scale}"
    return [Piece(match.start(), match.end(), spoken)]


def _vulgar_fraction(match: re.Match[str], british: bool) -> list[Piece]:
    top, bottom = VULGAR_FRACTIONS[match["v"]]
    part = numbers.fraction(top, bottom, british=british)
    if match["whole"]:
        if top == 1:
            part = "a " + part.split(" ", 1)[1]
        part = f"{numbers.cardinal(match['whole'], british=british)} and {part}"
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


_MAGNITUDE_SUFFIX = re.compile(rf"{_START}(?P<num>{NUM})(?P<mag>k|M|bn|mn|tn)(?![\w])")  # "B": "221B"


def _magnitude(match: re.Match[str], british: bool) -> list[Piece]:
    spoken = f"{numbers.number(match['num'], british=british)} {MAGNITUDES[match['mag']]}"
    return [Piece(match.start(), match.end(), spoken)]


_LINKS = frozenset({"is", "was", "are", "number", "no", "#"})
_NUMBER = re.compile(rf"(?<![\w.,/:])(?P<sign>[-−+±](?=[\d.]))?(?P<num>{NUM})(?P<plus>\+)?(?![\w])")
_YEAR_AFTER = frozenset({*ERA_SUFFIXES, "election", "elections", "season", "census", "budget", "model"})


def _number(match: re.Match[str], british: bool) -> list[Piece] | None:
    text, written = match.string, match["num"]
    sign = match["sign"]
    before, before_start = context.previous_word(text, match.start())
    if sign in ("-", "−") and not _negative_allowed(text, match.start()):
        return None
    cue = before.lower().rstrip(".:")
    if cue in _LINKS:  # "my PIN is 4321"
        cue = context.word_before(text, before_start).lower().rstrip(".:")
    if written.isdecimal() and cue in DIGIT_CUES:
        spoken = numbers.digits(written)
    elif written.isdecimal() and cue in PAIRED_CUES and len(written) in (3, 4):
        spoken = numbers.paired(written, british=british)
    elif "." in written and written[0] != "." and _is_version_context(before):
        spoken = numbers.version(written, british=british)
    elif written.isdecimal() and len(written) > 1 and written.startswith("0"):
        spoken = numbers.digits(written)
    elif _is_year(written) and _reads_as_year(text, match.start(), match.end(), before):
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


def _is_version_context(before: str) -> bool:
    word = before.lower().rstrip(":")
    return word in VERSION_CUES or (any(c.isdecimal() for c in word) and any(c.isalpha() for c in word))


_COUNT_CUES = frozenset({"about", "over", "under", "nearly", "almost", "than", "only", "just", "some", "all"})
_COUNTED = frozenset(
    {"people", "men", "women", "children", "feet", "times", "percent", "more", "fewer", "less"}
)
_NOT_PLURAL = frozenset({"is", "was", "has", "as", "its", "this", "us", "his", "thus", "yes", "plus", "less"})


def _reads_as_year(text: str, start: int, end: int, before: str) -> bool:
    """A four-digit number from 1000 to 2099 in running text is mostly a year ("nineteen ninety"); it is
    a count after "about", "over", ... or before a plural noun ("1500 people", "1200 calories")."""
    value = int(text[start:end].lstrip("+-"))
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
    Rule("money", _MONEY, _money),
    Rule("money_code_first", _MONEY_CODE_FIRST, _money_code_first),
    Rule("money_after", _MONEY_AFTER, _money_after),
    Rule("feet_inches", _FEET_INCHES, _feet_inches),
    Rule("inches", _INCHES, _inches),
    Rule("dimensions", _DIMENSIONS, _dimensions),
    Rule("decade", _DECADE, _decade),
    Rule("ordinal", _ORDINAL, _ordinal),
    Rule("range", _RANGE, _range),
    Rule("measure", _MEASURE, _measure),
    Rule("rating", _RATING, _rating),
    Rule("fraction", _FRACTION, _fraction),
    Rule("vulgar_fraction", _VULGAR_FRACTION, _vulgar_fraction),
    Rule("version", _VERSION, _version),
    Rule("magnitude", _MAGNITUDE_SUFFIX, _magnitude),
    Rule("ratio", _RATIO, _ratio),
    Rule("number", _NUMBER, _number),
)
FALLBACK_RULES = (Rule("digits_left", _DIGITS_LEFT, _digits_left),)
