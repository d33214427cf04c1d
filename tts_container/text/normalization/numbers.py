"""Numbers in words, as an American (or British) speaker says them.

num2words does the counting (it is already installed: misaki reads numbers with it); this module only
shapes its output for speech: no hyphens or commas, no "and" inside American numbers ("one hundred
twenty three", as TTS normalizers such as NVIDIA's NeMo write them; British English keeps "and"), digits
one by one where a person reads them so (phone numbers, decimals after the point, very long numbers).
"""

from __future__ import annotations

import re

from num2words import num2words

# Past this many digits nobody says a number as words (and num2words runs out of names at 10**33).
MAX_SPOKEN_DIGITS = 15

DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_AND = re.compile(r"\band\s+")
_JOIN = re.compile(r"[-,]\s*|\s+")


def _clean(words: str, british: bool) -> str:
    """num2words' "one hundred and twenty-three, ..." as the words a speaker says, one space apart."""
    words = _JOIN.sub(" ", words).strip()
    return words if british else _AND.sub("", words)


def digits(text: str) -> str:
    """Each digit of ``text`` as a word: "0123" -> "zero one two three" (other characters are dropped)."""
    return " ".join(DIGITS[int(c)] for c in text if c.isdecimal())


def cardinal(value: int | str, *, british: bool = False) -> str:
    """A whole number in words; "1,234" is 1234; longer than MAX_SPOKEN_DIGITS: digit by digit."""
    text = str(value).replace(",", "")
    negative = text.startswith("-")
    text = text.lstrip("-")
    words = digits(text) if len(text) > MAX_SPOKEN_DIGITS else _clean(num2words(int(text)), british)
    return f"minus {words}" if negative else words


def ordinal(value: int | str, *, british: bool = False) -> str:
    """ "twenty first" for 21."""
    text = str(value).replace(",", "")
    if len(text) > MAX_SPOKEN_DIGITS:
        return digits(text)
    return _clean(num2words(int(text), to="ordinal"), british)


def year(value: int | str, *, british: bool = False) -> str:
    """A year as said: 1990 "nineteen ninety", 1905 "nineteen oh five", 2005 "two thousand five"."""
    number = int(value)
    if 2000 <= number <= 2009 or number % 1000 == 0 or number < 1000:
        return cardinal(number, british=british)
    return _clean(num2words(number, to="year"), british)


def decimal(text: str, *, british: bool = False) -> str:
    """ "3.14" -> "three point one four", ".5" -> "point five", "1,234.5" -> "... point five"."""
    negative = text.startswith(("-", "−"))
    whole, _, fraction = text.replace(",", "").lstrip("-−").partition(".")
    words = cardinal(whole, british=british) if whole else ""
    if negative:
        words = f"minus {words}".strip()
    if fraction:
        words = f"{words} point {digits(fraction)}".strip()
    return words


def number(text: str, *, british: bool = False) -> str:
    """Any plain number as written: whole (with thousands separators) or decimal."""
    if "." in text:
        return decimal(text, british=british)
    return cardinal(text, british=british)


def version(text: str, *, british: bool = False) -> str:
    """A version "3.12.1" -> "three point twelve point one"; a part with a leading zero: "oh four"."""
    parts = []
    for part in text.split("."):
        if len(part) > 1 and part.startswith("0"):
            parts.append("oh " + cardinal(part, british=british) if part.strip("0") else digits(part))
        else:
            parts.append(cardinal(part, british=british))
    return " point ".join(parts)


def paired(text: str, *, british: bool = False) -> str:
    """A model or flight number as said in pairs: 737 "seven thirty seven", 404 "four oh four", 1080 "ten
    eighty", 3200 "thirty two hundred", 1905 "nineteen oh five"; round ones and other lengths as a
    cardinal (300 "three hundred", 2000 "two thousand")."""
    if len(text) == 4 and text[0] != "0" and text[1] != "0" and text[2:] == "00":
        return f"{cardinal(text[:2], british=british)} hundred"
    if len(text) == 4 and text[0] != "0" and text[2] == "0" and text[1] != "0":
        return f"{cardinal(text[:2], british=british)} oh {DIGITS[int(text[3])]}"
    if len(text) == 4 and text[2] != "0" and text[0] != "0":
        return f"{cardinal(text[:2], british=british)} {cardinal(text[2:], british=british)}"
    if len(text) == 3 and text[1:] != "00" and text[0] != "0":
        tail = cardinal(text[1:], british=british) if text[1] != "0" else "oh " + DIGITS[int(text[2])]
        return f"{DIGITS[int(text[0])]} {tail}"
    return cardinal(text, british=british)


_FRACTION_NAMES = {2: ("half", "halves"), 4: ("quarter", "quarters")}


def fraction(numerator: int, denominator: int, *, british: bool = False) -> str:
    """ "one half", "three quarters", "two thirds", "five eighths"."""
    if denominator in _FRACTION_NAMES:
        one, many = _FRACTION_NAMES[denominator]
    else:
        one = ordinal(denominator, british=british)
        many = one + "s"
    return f"{cardinal(numerator, british=british)} {one if numerator == 1 else many}"


def part_of(numerator: int, denominator: int, noun: str, *, adjective: bool, british: bool = False) -> str:
    """A part of one thing before its noun: "half a" (cup), "three quarters of an" (inch), "a third of
    a" (cup); as an adjective ("a 3/4-inch bolt", "a 1/2 mile walk") the singular, "three quarter"."""
    one_part = fraction(1, denominator, british=british).split()[1]
    if adjective:  # "a half mile walk", "a three quarter inch bolt"
        return one_part if numerator == 1 else f"{cardinal(numerator, british=british)} {one_part}"
    article = "an" if noun[:1].lower() in "aeiou" or noun.lower().startswith("hour") else "a"
    if (numerator, denominator) == (1, 2):
        return f"half {article}"
    if numerator == 1:  # "a quarter of a cup", "an eighth of a teaspoon"
        return f"{'an' if one_part[0] in 'aeiou' else 'a'} {one_part} of {article}"
    return f"{fraction(numerator, denominator, british=british)} of {article}"


def is_one(text: str) -> bool:
    """Whether an amount as written takes a singular unit ("1 km", "-1 °C"; not "1.0 kg" or "0.5 kg")."""
    return text.replace(",", "").lstrip("-−+") == "1"
