"""Rules for amounts: money in several currencies and magnitudes, measures with their units (attached or
spaced), feet and inches, and dimensions ("1920x1080"). :mod:`.numeric_rules` orders them among the
other number rules.
"""

from __future__ import annotations

import re

from tts_container.text.normalization import context, measures, numbers
from tts_container.text.normalization.patterns import AMOUNT, NUM, START, UNIT, piece
from tts_container.text.normalization.scanner import Piece, Rule, alternation
from tts_container.text.normalization.unit_tables import (
    ATTACHED_ONLY,
    CENT_SIGNS,
    CURRENCY_CODES,
    CURRENCY_SYMBOLS,
    INCH,
    MAGNITUDES,
    SPACED_ONLY,
    UNITS,
)

_SYMBOL = alternation(CURRENCY_SYMBOLS)
_CODE = alternation(CURRENCY_CODES)
_MAGNITUDE = r"thousand|million|billion|trillion|bn|mn|tn|[kKmMbBT]"


# --- money ------------------------------------------------------------------------------------------

_MONEY = re.compile(
    rf"(?:(?<![^\s(\[{{=<>~≈:])(?P<sign>[-−]))?(?<![\w])(?P<sym>{_SYMBOL})\s?(?P<amt>{NUM})(?:(?P<attached>(?:{_MAGNITUDE}))(?![\w])"
    rf"|(?P<space>\s)(?P<word>thousand|million|billion|trillion)\b)?"
    rf"(?:\s?(?P<dash>[-–—]|to)\s?(?P<sym2>{_SYMBOL})?(?P<amt2>{NUM})(?P<mag2>{_MAGNITUDE})?(?![\w]))?"
    rf"(?:/(?P<per>[A-Za-z]{{1,12}}))?(?![\w])"
)
_PER = {"hr": "hour", "h": "hour", "wk": "week", "mo": "month", "yr": "year"}


def _per(written: str) -> str:
    """What a price is per: "/hr" an hour's, "/oz" an ounce's."""
    return _PER.get(written) or (UNITS[written][0] if written in UNITS else written)


def _money(match: re.Match[str], british: bool) -> list[Piece]:
    pieces = _money_pieces(match, british)
    if match["sign"]:  # "-$50": a balance below zero
        first = pieces[0]
        pieces[0] = Piece(first.start, first.end, "minus " + first.spoken)
    return pieces


def _money_pieces(match: re.Match[str], british: bool) -> list[Piece]:
    names = CURRENCY_SYMBOLS[match["sym"]]
    if context.before_a_noun(match.string, match.start(), match.end()) and not match["amt2"]:
        names = (names[0], names[0], names[2], names[3])  # "a $5 bill": a five dollar bill
    per = f" per {_per(match['per'])}" if match["per"] else ""
    if match["amt2"]:
        low = numbers.number(match["amt"], british=british)
        magnitude = match["mag2"] or match["attached"]
        low += f" {MAGNITUDES[match['attached']]}" if match["attached"] else ""
        if match["dash"] == "to" and match["sym2"]:  # "from $30 to $25": two prices, each said whole
            low = measures.money(match["amt"], names, match["attached"], british)
        high = measures.money(match["amt2"], names, magnitude, british)
        return [Piece(match.start(), match.end(), f"{low} to {high}{per}")]
    if match["word"]:
        return [
            Piece(match.start(), match.end("amt"), numbers.number(match["amt"], british=british)),
            piece(match, "word", f"{match['word']} {names[1]}{per}"),
        ]
    return [
        Piece(
            match.start(), match.end(), measures.money(match["amt"], names, match["attached"], british) + per
        )
    ]


_MONEY_AFTER = re.compile(
    rf"{START}(?P<amt>{NUM})(?P<mag>{_MAGNITUDE})?(?P<space>\s?)(?:(?P<sym>€|£|¥|\$|¢|p(?![\w]))|"
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
    rf"{START}(?P<amt>[-−±+]?{AMOUNT})(?:\s(?P<mag>thousand|million|billion|trillion))?(?P<hyphen>-)?"
    rf"(?P<space>\s?)(?P<unit>{UNIT})"
    rf"(?:/(?P<per>{UNIT}|hour|day|week|month|year|person|dose))?(?![\w°²³/\-])(?P<dot>\.(?=\s+[a-z\d]))?"
)


def _measure(match: re.Match[str], british: bool) -> list[Piece] | None:
    symbol, space = match["unit"], match["space"]
    adjective = bool(match["hyphen"]) or context.before_a_noun(match.string, match.start(), match.end())
    spaced_before_a_word = space and context.word_follows(match.string, match.end())
    if symbol in ATTACHED_ONLY and spaced_before_a_word and not adjective:
        return None  # "5 s and" stays a letter; "a 60 W bulb" is a sixty watt bulb
    if symbol in SPACED_ONLY and (not space or context.word_follows(match.string, match.end())):
        return None  # "0 K." is zero kelvin; "4K" and "a 5 K run" stay letters
    if symbol == "x":
        following = _EMPHASIS.sub("", match.string[match.end() : match.end() + context.WINDOW]).lstrip()[:1]
        if following.isdecimal():
            return None  # "4 x 4" is a dimension
        preceding = _EMPHASIS.sub("", match.string[max(0, match.start() - context.WINDOW) : match.start()])
        preceding = preceding.rstrip()[-1:]
        operator = (following and following in "=+-<>≤≥*/^") or (preceding and preceding in "=+-<>≤≥*/^")
        if (operator or _ALGEBRA.search(match.string)) and not space:  # "2x = 10", "y = 2x", "x = 5 ... 2x?"
            return [Piece(match.start(), match.end(), f"{measures.amount(match['amt'], british)} x")]
    written = match["amt"].replace("−", "-")
    if written.startswith(("-", "±", "+")) and not context.negative_allowed(match.string, match.start()):
        return None
    sign = {"±": "plus or minus ", "+": "plus "}.get(written[0], "")
    written = written.lstrip("±+")
    amount = sign + measures.amount(written, british)
    if symbol == "mmHg" and "/" in written and " " not in written:  # "120/80 mmHg": a blood pressure
        amount = " over ".join(numbers.cardinal(side, british=british) for side in written.split("/"))
    elif (part := _proper_fraction(written)) and not match["per"] and not match["mag"]:
        # "3/4 tsp": three quarters of a teaspoon; "a 3/4-inch bolt": a three quarter inch bolt
        amount = sign + numbers.part_of(*part, UNITS[symbol][0], adjective=adjective, british=british)
        adjective = True
    name = measures.unit(symbol, "2" if match["mag"] else written, adjective=adjective)
    if match["per"]:
        per = match["per"]
        name += " per " + (UNITS[per][0] if per in UNITS else per)
    if match["mag"]:  # "149.6 million km": three written words
        return [
            piece(match, "amt", amount),
            piece(match, "mag", match["mag"]),
            Piece(match.start("unit"), match.end(), name),
        ]
    if space:
        return [piece(match, "amt", amount), Piece(match.start("unit"), match.end(), name)]
    return [Piece(match.start(), match.end(), f"{amount} {name}")]


_EMPHASIS = re.compile(r"\*{2,3}")  # "**3x** faster": emphasis, not a product
_ALGEBRA = re.compile(r"(?<![\w])x\s*[=<>≤≥]")  # "x = 5" makes every "2x" near it two x


def _proper_fraction(written: str) -> tuple[int, int] | None:
    """ "3/4" -> (3, 4); None for anything else ("1 1/2", "5/4", "3.5")."""
    top, slash, bottom = written.partition("/")
    if not slash or not top.isdecimal() or not bottom.isdecimal() or not 0 < int(top) < int(bottom):
        return None
    return int(top), int(bottom)


# "in" is a unit attached ("12in"), with its period ("2 in. square"), at a sentence end, or before what
# measures take ("15 in screen", "27 in diagonally", "12 in x 8 in"); otherwise it is the preposition
# ("5 in stock").
_INCHES = re.compile(
    rf"{START}(?P<amt>{AMOUNT})(?:(?P<attached>in(?:\.(?=\s+[a-z\d]))?|″|\")|(?P<space>\s)"
    rf"(?P<spaced>in\.(?=\s+[a-z\d])|in(?=\.(?:\s|$))|(?:in|inch(?:es)?)"
    rf"(?=\s*(?:$|[,;:!?)]|[x×]|by\b|wide|long|high|tall|thick|thin|deep|across|square|diagonal(?:ly)?|screen|display"
    rf"|monitor|laptop|tablet|wheels?|rims?|pizza|pan|skillet))))(?!\w)"
)
_FEET_INCHES = re.compile(
    rf"{START}(?P<ft>\d+)(?:\s?['′’]\s?(?P<in>\d{{1,2}}(?:\.\d+)?)\s?(?:\"|″|''|”)|['′’])(?![\w'])"
)


def _inches(match: re.Match[str], british: bool) -> list[Piece]:
    written = match["amt"]
    singular = numbers.is_one(written) or context.before_a_noun(match.string, match.start(), match.end())
    name = INCH[0] if singular else INCH[1]
    amount = measures.amount(written, british)
    if match["space"]:
        return [piece(match, "amt", amount), piece(match, "spaced", name)]
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
    rf"{START}(?P<a>{NUM})\s?[x×]\s?(?P<b>{NUM})(?:\s?[x×]\s?(?P<c>{NUM}))?"
    rf"(?:(?P<space>\s?)(?P<unit>{UNIT})(?![\w°²³/])|(?![\w]|\.\d))"
)


def _side(written: str, british: bool) -> str:
    """A side of a dimension; screen sizes are said in pairs: 1920x1080 "nineteen twenty by ten eighty"."""
    return (
        numbers.paired(written, british=british)
        if len(written) == 4 and written.isdecimal()
        else numbers.number(written, british=british)
    )


def _dimensions(match: re.Match[str], british: bool) -> list[Piece] | None:
    if "×" in match[0] and " " in match[0] and not _measured(match):
        return None  # "2 × 3" is a product: the symbol rule says "times"
    sides = [_side(match[g], british) for g in ("a", "b", "c") if match[g]]
    said = " by ".join(sides)
    symbol = match["unit"]
    if symbol is None:
        return [Piece(match.start(), match.end(), said)]
    if symbol in ATTACHED_ONLY and context.word_follows(match.string, match.end()):
        return [Piece(match.start(), match.start("space"), said)]  # "4 x 4 s and"
    after = context.word_after(match.string, match.end()).rstrip(".,;:!?")
    adjective = after.isalpha() and after not in _AFTER_A_MEASURE  # "the 4x100m relay", "3 x 4 m wide"
    name = measures.unit(symbol, match["c"] or match["b"], adjective=adjective)
    return [Piece(match.start(), match.start("space"), said), Piece(match.start("unit"), match.end(), name)]


# Words after a measure that leave its unit a noun ("3 x 4 m wide": four meters wide).
_AFTER_A_MEASURE = frozenset(
    {"wide", "long", "high", "tall", "deep", "thick", "across", "apart", "away", "of", "in", "on", "at", "to"}
    | {"for", "and", "or", "per", "is", "was", "are", "each"}
)
_UNIT_WORDS = frozenset(UNITS) | frozenset(name for names in UNITS.values() for name in names)
_UNIT_WORDS |= {"in", "in.", *INCH}  # "12 in x 8 in": twelve inches by eight inches


def _measured(match: re.Match[str]) -> bool:
    """A size, not a product: "a 3 × 3 grid", "3 × 4 meters" (what follows is a unit, or a determiner
    comes before), where "what is 3 × 4?" and "2 × 3 = 6" multiply."""
    after = context.word_after(match.string, match.end()).rstrip(".,;:!?")
    determiner = context.word_before(match.string, match.start()).lower() in context.DETERMINERS
    return after in _UNIT_WORDS or (determiner and after.isalpha())


_SCIENTIFIC = re.compile(
    rf"{START}(?P<m>{NUM})\s?[×x*]\s?10(?:\^(?P<e>[-−]?\d{{1,3}})|(?P<sup>[⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]{{1,3}}))(?![\w])"
    rf"(?:\s?(?P<unit>{UNIT})(?![\w°²³/]))?"
)
_SUPERSCRIPT_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def _scientific(match: re.Match[str], british: bool) -> list[Piece]:
    """ "6.02×10^23": six point zero two times ten to the twenty third."""
    exponent = (match["e"] or match["sup"].translate(_SUPERSCRIPT_DIGITS)).replace("−", "-")
    power = ("minus " if exponent.startswith("-") else "") + numbers.ordinal(
        exponent.lstrip("-"), british=british
    )
    said = f"{numbers.number(match['m'], british=british)} times ten to the {power}"
    if match["unit"]:  # "3×10⁸ m/s" (the unit's own rule reads "/s" on)
        said += " " + UNITS[match["unit"]][1]
    return [Piece(match.start(), match.end(), said)]


_E_NOTATION = re.compile(rf"{START}(?P<m>\d+(?:\.\d+)?)[eE](?P<e>[-+−]?\d{{1,3}})(?![\w.]|\.\d)")


def _e_notation(match: re.Match[str], british: bool) -> list[Piece]:
    """ "1e-4" as programmers say it: one E minus four."""
    exponent = match["e"].replace("−", "-")
    sign = {"-": "minus ", "+": "plus "}.get(exponent[0], "")
    said = f"{numbers.number(match['m'], british=british)} E {sign}"
    said += numbers.cardinal(exponent.lstrip("+-"), british=british)
    return [Piece(match.start(), match.end(), said)]


_FEET_AND_INCHES = re.compile(
    rf"{START}(?P<ft>\d+)\s?(?:ft|feet|foot)\.?\s+(?P<in>\d{{1,2}}(?:\.\d+)?)\s?(?:in|inch|inches)\b\.?(?!\w)"
)
_PER_UNIT = re.compile(rf"(?<![\w])(?<=per )(?P<unit>{UNIT})(?![\w°²³/])")


def _feet_and_inches(match: re.Match[str], british: bool) -> list[Piece]:
    """ "6 ft 2 in": six feet two inches."""
    inches = match["in"]
    said = f"{numbers.cardinal(match['ft'], british=british)} {'foot' if match['ft'] == '1' else 'feet'} "
    said += f"{numbers.number(inches, british=british)} {INCH[0] if inches == '1' else INCH[1]}"
    if match[0].endswith(".") and context.ends_sentence(match.string, match.end()):
        said += "."
    return [Piece(match.start(), match.end(), said)]


def _per_unit(match: re.Match[str], british: bool) -> list[Piece] | None:
    """ "grams of protein per kg": a unit alone after "per" is one of it."""
    symbol = match["unit"]
    if symbol in ATTACHED_ONLY:
        return None
    return [Piece(match.start(), match.end(), UNITS[symbol][0])]


_BY_BETWEEN_MEASURES = re.compile(r"(?<=\s)[x×](?=\s+\d)")


def _by_between_measures(match: re.Match[str], british: bool) -> list[Piece] | None:
    """The x of "12 ft x 14 ft" is "by" (after a unit of a number; "3 x 4" is a dimension rule of its own)."""
    before, before_start = context.previous_word(match.string, match.start())
    amount = context.word_before(match.string, before_start)
    measured = before in _UNIT_WORDS and (amount[-1:].isdecimal() or before not in ("in", "in."))
    return [Piece(match.start(), match.end(), "by")] if measured else None


RULES_FIRST = (
    Rule("money", _MONEY, _money),
    Rule("money_code_first", _MONEY_CODE_FIRST, _money_code_first),
    Rule("money_after", _MONEY_AFTER, _money_after),
    Rule("feet_inches", _FEET_INCHES, _feet_inches),
    Rule("feet_and_inches", _FEET_AND_INCHES, _feet_and_inches),
    Rule("inches", _INCHES, _inches),
    Rule("scientific", _SCIENTIFIC, _scientific),
    Rule("e_notation", _E_NOTATION, _e_notation),
    Rule("dimensions", _DIMENSIONS, _dimensions),
    Rule("by_between_measures", _BY_BETWEEN_MEASURES, _by_between_measures),
    Rule("per_unit", _PER_UNIT, _per_unit),
)
# After ranges ("10-20 km" is a range of kilometres), before fractions and plain numbers.
MEASURE = Rule("measure", _MEASURE, _measure)
