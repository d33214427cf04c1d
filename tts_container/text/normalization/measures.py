"""Amounts with what they count: a unit ("3.5kg"), a currency ("$1.2M", "€20") or a range ("5-10 kg").

Each function returns the spoken words; the rules in :mod:`.amount_rules` and :mod:`.numeric_rules`
decide which written word gets which words.
"""

from __future__ import annotations

from tts_container.text.normalization import numbers
from tts_container.text.normalization.unit_tables import MAGNITUDES, UNITS


def amount(text: str, british: bool) -> str:
    """A written amount ("3.5", "1,000", "-2", "1 1/2", "3/4") in words."""
    text = text.replace("−", "-").strip()
    if " " in text and "/" in text:  # a mixed number: "1 1/2"
        whole, part = text.split(None, 1)
        return f"{numbers.cardinal(whole, british=british)} and {_fraction(part, british, mixed=True)}"
    if "/" in text:
        return _fraction(text, british, mixed=False)
    return numbers.number(text, british=british)


def _fraction(text: str, british: bool, *, mixed: bool) -> str:
    top, bottom = (int(part) for part in text.split("/"))
    if mixed and top == 1:
        return "a " + numbers.fraction(1, bottom, british=british).split(" ", 1)[1]
    return numbers.fraction(top, bottom, british=british)


def unit(symbol: str, written_amount: str, *, adjective: bool = False) -> str:
    """The unit's name, singular after exactly one (or as an adjective: "a 5-km run"), else plural."""
    one, many = UNITS[symbol]
    singular = adjective or numbers.is_one(written_amount)
    if "/" in written_amount and " " not in written_amount:
        top, bottom = written_amount.split("/")
        singular = adjective or int(top) <= 1 < int(bottom)  # "1/2 cup": a part of one cup
    return one if singular else many


def money(
    written_amount: str,
    names: tuple[str, str, str, str],
    magnitude: str | None,
    british: bool,
) -> str:
    """ "five dollars", "one dollar and fifty cents", "ninety nine cents", "one point two million dollars"."""
    one, many, cent, cents = names
    text = written_amount.replace(",", "")
    if magnitude:
        return f"{numbers.number(text, british=british)} {MAGNITUDES[magnitude]} {many}"
    whole, _, fraction = text.partition(".")
    if fraction and len(fraction) == 2:
        whole_value, cent_value = int(whole or "0"), int(fraction)
        whole_words = f"{numbers.cardinal(whole_value, british=british)} {one if whole_value == 1 else many}"
        cent_words = f"{numbers.cardinal(cent_value, british=british)} {cent if cent_value == 1 else cents}"
        if cent_value == 0:
            return whole_words
        if whole_value == 0:
            return cent_words
        return f"{whole_words} and {cent_words}"
    if fraction:
        return f"{numbers.decimal(text, british=british)} {many}"
    return f"{numbers.cardinal(text, british=british)} {one if numbers.is_one(text) else many}"
