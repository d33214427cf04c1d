"""Rules for words and symbols: abbreviations, Roman numerals, letter-digit codes, symbols.

Context decides the ambiguous ones: "St." is "Saint" before a name and "Street" after one; "IV" is a
number after "Chapter" or a name ("World War II", "Rocky III"), an ordinal after a ruler's name ("Louis
XIV" -> "Louis the fourteenth"), and left alone elsewhere; the pronoun "I" is only ever a numeral after a
ruler's name or a word such as "Chapter".
"""

from __future__ import annotations

import re

from tts_container.text.normalization import context, numbers
from tts_container.text.normalization.scanner import Piece, Rule, alternation
from tts_container.text.normalization.tables import (
    ABBREVIATIONS,
    BEFORE_NUMBER,
    ERA_SUFFIXES,
    MONTHS,
    PLACE_OR_TITLE,
    REGNAL_NAMES,
    ROMAN_CUES,
    SUPERSCRIPTS,
    SYMBOLS,
    WEEKDAYS,
)

# Abbreviations that may end a sentence: there the period is kept, so the pause after it is kept too.
_MAY_END_SENTENCE = frozenset(
    {"etc.", "Inc.", "Ltd.", "Co.", "Corp.", "Bros.", "Jr.", "Sr.", "Ave.", "Blvd.", "Rd.", "Ln.", "Hwy."}
    | {"U.S.", "U.S.A.", "U.K.", "E.U.", "U.N.", "a.m.", "p.m.", "A.M.", "P.M.", "et al.", "Ph.D.", "misc."}
    | {"dept.", "Dept.", "approx.", "est.", "Est."}
)
_ABBREVIATION = re.compile(rf"(?<![\w.])(?P<abbr>{alternation(ABBREVIATIONS)})(?![\w]|(?<=\w)\.\w)")
_DETERMINERS = frozenset(
    {"the", "a", "an", "our", "my", "your", "his", "her", "their", "its", "this", "that"}
)
_WORLD_WAR = re.compile(r"(?<![\w])WW(?P<n>I{1,2}|[12])(?![\w])")


def _sentence_period(match: re.Match[str], written: str) -> str:
    """The period of "etc." that also ends the sentence is kept (with its pause); so is any at the end."""
    if not written.endswith("."):
        return ""
    if not match.string[
        match.end() : match.end() + context.WINDOW
    ].strip() and match.end() + context.WINDOW >= len(match.string):
        return "."
    return "." if written in _MAY_END_SENTENCE and context.ends_sentence(match.string, match.end()) else ""


def _abbreviation(match: re.Match[str], british: bool) -> list[Piece] | None:
    written = match["abbr"]
    if written in ("v.", "vs") and not context.word_after(match.string, match.end()):
        return None
    if written == "max." and context.ends_sentence(match.string, match.end()):
        return None  # "80% of your max.": the word, not an abbreviation
    if written[:-1] in WEEKDAYS and context.word_before(match.string, match.start()).lower() in _DETERMINERS:
        return None  # "the Sun." is the star, not Sunday
    return [Piece(match.start(), match.end(), ABBREVIATIONS[written] + _sentence_period(match, written))]


def _world_war(match: re.Match[str], british: bool) -> list[Piece]:
    number = "one" if match["n"] in ("I", "1") else "two"
    return [Piece(match.start(), match.end(), f"World War {number}")]


_PLACE_OR_TITLE = re.compile(rf"(?<![\w.])(?P<abbr>{alternation(PLACE_OR_TITLE)})(?![\w])")


def _place_or_title(match: re.Match[str], british: bool) -> list[Piece] | None:
    """ "St. Louis" is "Saint Louis", "Main St." "Main Street"; "Dr. Smith" "Doctor", "Elm Dr." "Drive"."""
    written = match["abbr"]
    title, place, otherwise = PLACE_OR_TITLE[written]
    text = match.string
    if text[match.end() : match.end() + 1] == "." and f"{written}." in ABBREVIATIONS:
        return None  # "Park Ave. and": the abbreviation with its period (which ends no sentence here)
    before, before_start = context.previous_word(text, match.start())
    name_before = context.is_name(before) or before[:1].isdecimal() or (before.isupper() and len(before) > 1)
    name_after = context.word_after(text, match.end())[:1].isupper()
    if not written.endswith(".") and not (name_before or name_after):
        return None
    if name_before and (not context.starts_sentence(text, before_start) or not name_after):
        said = place
    elif name_after:
        said = title
    else:
        said = otherwise
    if said != title and written.endswith(".") and context.ends_sentence(text, match.end()):
        said += "."
    return [Piece(match.start(), match.end(), said)]


_BEFORE_NUMBER = re.compile(rf"(?<![\w.])(?P<abbr>{alternation(BEFORE_NUMBER)})(?=\s?\d)")


def _before_number(match: re.Match[str], british: bool) -> list[Piece] | None:
    written = match["abbr"]
    if written == "No" and match.string[match.end() : match.end() + 1] != " ":
        return None
    return [Piece(match.start(), match.end(), BEFORE_NUMBER[written])]


_ERA = re.compile(rf"(?<=\d)(?P<sp>\s?)(?P<era>{alternation(ERA_SUFFIXES)})(?![\w]|(?<=\w)\.\w)")


def _era(match: re.Match[str], british: bool) -> list[Piece]:
    written = match["era"]
    period = "." if written.endswith(".") and context.ends_sentence(match.string, match.end()) else ""
    return [Piece(match.start("era"), match.end(), ERA_SUFFIXES[written] + period)]


# --- Roman numerals ---------------------------------------------------------------------------------

_ROMAN = re.compile(r"(?<![\w'’\-])(?P<r>[IVXLCDM]{1,8})(?![\w\-]|['’]\w\w)")
_VALID_ROMAN = re.compile(r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_value(numeral: str) -> int | None:
    """The value of a well-formed Roman numeral in capitals ("XIV" -> 14), else None."""
    if not numeral or not _VALID_ROMAN.fullmatch(numeral):
        return None
    total = 0
    for here, after in zip(numeral, [*numeral[1:], ""], strict=True):
        value = _ROMAN_VALUES[here]
        total += -value if after and _ROMAN_VALUES[after] > value else value
    return total


def _roman(match: re.Match[str], british: bool) -> list[Piece] | None:
    numeral = match["r"]
    value = roman_value(numeral)
    if value is None:
        return None
    text = match.string
    before, before_start = context.previous_word(text, match.start())
    if (
        len(numeral) == 1
        and text[match.end() : match.end() + 1] == "."
        and context.is_name(context.word_after(text, match.end() + 1))
    ):
        return None  # "Albert I. Jones": a middle initial
    if before in REGNAL_NAMES:
        return [Piece(match.start(), match.end(), "the " + numbers.ordinal(value, british=british))]
    cued = before.lower().rstrip(".") in ROMAN_CUES
    titled = (
        context.is_name(before)
        and set(numeral) <= set("IVX")
        and len(numeral) >= 2
        and (not context.starts_sentence(text, before_start) or _sequel_at_start(text, match.end(), numeral))
    )
    if not (cued or titled):
        return None
    return [Piece(match.start(), match.end(), numbers.cardinal(value, british=british))]


def _sequel_at_start(text: str, end: int, numeral: str) -> bool:
    """ "Rocky III came out": a title opening the sentence, then a verb (never "IV", an IV drip)."""
    after = context.word_after(text, end)
    return numeral != "IV" and after.isalpha() and after.islower()


# --- letter-digit codes: "MP3", "4K", "COVID-19", "x86", "A320", "3D" ----------------------------------

_CODE = re.compile(
    r"(?<![\w\-.])(?P<code>(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z\d]+|[A-Za-z]+-(?!\d*0s\b)\d+(?:\.\d+)?[A-Za-z]*|\d+-[A-Za-z]+)"
    r"(?![\w]|-\w|\.\d)"
)
_RUNS = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")
_VOWELS = set("aeiouyAEIOUY")


def _code_digits(run: str, british: bool) -> str:
    if "." in run:
        return numbers.decimal(run, british=british)
    if run.startswith("0") and len(run) > 1:
        return numbers.digits(run)
    return numbers.paired(run, british=british)


def _code_letters(run: str) -> str:
    if len(run) <= 3 and (run.isupper() or len(run) == 1 or not (_VOWELS & set(run))):
        return " ".join(run.upper())
    return run


def _code(match: re.Match[str], british: bool) -> list[Piece] | None:
    code = match["code"]
    said = [
        _code_digits(run, british) if run[0].isdecimal() else _code_letters(run)
        for run in _RUNS.findall(code)
    ]
    return [Piece(match.start(), match.end(), " ".join(said))]


# --- symbols ----------------------------------------------------------------------------------------

_MULTI = {"->": "to", "=>": "to", "<-": "from", "<->": "to and from", "<=": "is less than or equal to",
          ">=": "is greater than or equal to", "!=": "is not equal to", "==": "equals",
          "+/-": "plus or minus", "++": "plus plus", "^2": "squared", "^3": "cubed"}  # fmt: skip
_SYMBOL = re.compile(
    rf"(?P<sym>{alternation(_MULTI)}|[{re.escape(''.join(SYMBOLS))}{''.join(SUPERSCRIPTS)}%*])"
)
_PER_WORDS = {"s": "second", "sec": "second", "min": "minute", "h": "hour", "hr": "hour", "hour": "hour"}
_PER_WORDS |= {"day": "day", "wk": "week", "week": "week", "mo": "month", "month": "month", "yr": "year"}
_PER_WORDS |= {"year": "year", "user": "user", "person": "person", "seat": "seat", "query": "query"}
_SPACED_ONLY = frozenset({"<", ">", "/", "\\", "=", "-"})


def _symbol(match: re.Match[str], british: bool) -> list[Piece] | None:
    symbol = match["sym"]
    text = match.string
    left = text[match.start() - 1] if match.start() else " "
    right = text[match.end()] if match.end() < len(text) else " "
    if symbol in SUPERSCRIPTS or symbol in ("^2", "^3"):
        if not left.isalnum():
            return None
        return [Piece(match.start(), match.end(), _MULTI.get(symbol) or SUPERSCRIPTS[symbol])]
    if symbol == "%":
        return [Piece(match.start(), match.end(), "percent")]
    if symbol == "*":
        spaced_numbers = (
            left.isspace()
            and right.isspace()
            and re.search(r"\d\s*$", text[max(0, match.start() - 8) : match.start()])
        )
        between_digits = left.isdecimal() and right.isdecimal()  # "2*3*4"
        return [Piece(match.start(), match.end(), "times")] if spaced_numbers or between_digits else None
    if symbol == "/":
        denominator = re.match(r"[A-Za-z]+", text[match.end() :])
        if (
            denominator
            and denominator[0] in _PER_WORDS
            and (left.isdecimal() or left.isalpha())
            and (left.isdecimal() or not context.word_follows(text, match.end() + len(denominator[0])))
        ):  # "100 requests/min", "5 calls/day", "max 8/day": per
            return [
                Piece(match.start(), match.end() + len(denominator[0]), " per " + _PER_WORDS[denominator[0]])
            ]
        if left.isalpha() and right.isalpha():
            word = context.word_after(text, context.previous_word(text, match.start())[1])
            plain = left.isupper() or right.isupper() or word.lower().startswith("and/or")
            return [Piece(match.start(), match.end(), " " if plain else " or ")]
        if not (left.isspace() and right.isspace()):
            return None
        before = context.word_before(text, match.start())
        if before[-1:].isdecimal() and context.word_after(text, match.end())[:1].isdecimal():
            sum_follows = "=" in text[match.end() : match.end() + context.WINDOW]
            return [
                Piece(match.start(), match.end(), "divided by" if sum_follows else "over")
            ]  # "10 / 2 = 5"
        return [Piece(match.start(), match.end(), "slash")]
    if symbol in _SPACED_ONLY and not (left.isspace() and right.isspace()):
        return None
    if symbol == "~" and not right.isdecimal() and not right.isspace() and right not in "$€£¥":
        return None
    if symbol == "°" and left.isdecimal():
        return None
    if symbol == "+" and left.isalpha() and right.isalpha():
        return [Piece(match.start(), match.end(), " plus ")]
    said = _MULTI.get(symbol, SYMBOLS.get(symbol, ""))
    if said.startswith("is ") and not _is_a_term(context.word_before(text, match.start())):
        said = said.removeprefix("is ")  # "x ≥ 5": x is greater...; "scores ≥ 90": scores greater...
    return [Piece(match.start(), match.end(), said)]


def _is_a_term(word: str) -> bool:
    """A variable, a number or a bracket closes before a comparison: "x < 5", "f(x) > 0", "2 < 3"."""
    return len(word) == 1 or word[-1:].isdecimal() or word.endswith(")")


_WEEKDAY = alternation(WEEKDAYS)
_WEEKDAY_RANGE = re.compile(rf"(?<![\w])(?P<a>{_WEEKDAY})\.?\s?[-–]\s?(?P<b>{_WEEKDAY})(?P<dot>\.)?(?![\w])")


def _weekday_range(match: re.Match[str], british: bool) -> list[Piece]:
    """ "Mon-Fri" is "Monday to Friday"."""
    said = f"{WEEKDAYS[match['a']]} to {WEEKDAYS[match['b']]}"
    if match["dot"] and context.ends_sentence(match.string, match.end()):
        said += "."
    return [Piece(match.start(), match.end(), said)]


_MONTH_WORD = "|".join(sorted({m.capitalize() for m in MONTHS}, key=len, reverse=True))
_WEEKDAY_BEFORE_DATE = re.compile(
    rf"(?<![\w])(?P<day>{_WEEKDAY})(?P<dot>\.)?(?=,?\s+(?:(?:{_MONTH_WORD})\b|\d{{1,2}}"
    rf"(?:st|nd|rd|th\b|\s+(?:{_MONTH_WORD})\b|\s*(?:[,;)]|$))))"
)


def _weekday_before_date(match: re.Match[str], british: bool) -> list[Piece]:
    """ "Mon, Feb 10" and "Sat 3 May": the short weekday of a date is said whole ("Monday")."""
    return [Piece(match.start(), match.end(), WEEKDAYS[match["day"]])]


# Markdown marks a reader never says (the client's speech filter removes all markdown; text sent to the
# server by other callers may still carry these): emphasis stars and underscores, strikethrough tildes
# (the struck words are read, as the client's filter does), code backticks, heading
# hashes, quote and bullet marks opening a line, a link's brackets and address ("[docs](https://...)" is
# "docs"). misaki would read "**" as "asterisk asterisk", "#" as "hash", and "`" as a quotation mark.
_UNSAID_MARKUP = re.compile(
    r"(?<!\*)\*{2,3}(?!\*)|(?m:^[ \t]*(?:#{1,6}|>|[*+])(?=[ \t]))|`+"
    r"|(?<![\w*])\*(?=[^\s*][^*\n]{0,80}(?<=[^\s*])\*(?![\w*]))|(?<=[^\s*])\*(?![\w*])"
    r"|(?<!\w)__(?=[^\s_])|(?<=[^\s_])__(?!\w)"
    r"|(?<![\w~])~~(?=[^\s~])|(?<=[^\s~])~~(?![\w~])"
    r"|\[(?=[^\[\]\n]{1,200}\]\([^()\s]{1,500}\))|\]\([^()\s]{1,500}\)"
)


def _unsaid_markup(match: re.Match[str], british: bool) -> list[Piece] | None:
    text, start, end = match.string, match.start(), match.end()
    closing = start > 0 and not text[start - 1].isspace()  # the pattern saw an opening mark's close
    if match[0] in ("*", "__", "~~") and closing and text.rfind(match[0], max(0, start - 202), start) < 0:
        return None  # a closing mark with no opening one
    if match[0].startswith("](") and text.rfind("[", max(0, start - 201), start) <= text.rfind("]", 0, start):
        return None  # no "[" of a link before it
    if match[0] == "**" and start > 0 and end < len(text):  # "2**10", "x ** 2": Python's power
        spaced = text[start - 1] == " " == text[end]
        left = text[start - 2 if spaced else start - 1 : start].strip()
        right = text[end : end + 2 if spaced else end + 1].strip()
        tight = not text[start - 1].isspace() and not text[end].isspace()
        if (spaced or tight) and left.isalnum() and right.isalnum():
            return [Piece(start, end, "to the power of")]
    return [Piece(start, end, "")]


# "C#", "F#": the note and the languages named after it.
_SHARP = re.compile(r"(?<![\w#])(?P<note>[A-G])#(?![\w#])")


def _sharp(match: re.Match[str], british: bool) -> list[Piece]:
    return [Piece(match.start(), match.end(), f"{match['note']} sharp")]


RULES = (
    Rule("unsaid_markup", _UNSAID_MARKUP, _unsaid_markup),
    Rule("sharp", _SHARP, _sharp),
    Rule("weekday_range", _WEEKDAY_RANGE, _weekday_range),
    Rule("weekday_before_date", _WEEKDAY_BEFORE_DATE, _weekday_before_date),
    Rule("world_war", _WORLD_WAR, _world_war),
    Rule("before_number", _BEFORE_NUMBER, _before_number),
    Rule("place_or_title", _PLACE_OR_TITLE, _place_or_title),
    Rule("abbreviation", _ABBREVIATION, _abbreviation),
    Rule("era", _ERA, _era),
    Rule("roman", _ROMAN, _roman),
)
LATE_RULES = (
    Rule("code", _CODE, _code),
    Rule("symbol", _SYMBOL, _symbol),
)
