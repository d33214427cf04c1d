"""The text normalizer on its test set, its two views (spoken text, written-word pairs), dialects,
languages it leaves alone, and text made up to break it."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.speech_check import words
from tests.tts_container.normalization_cases import CASES, WHISPER_SUBSET
from tts_container.text.normalization.normalizer import Reading, normalize, normalize_text, spoken_words
from tts_container.text.normalization.scanner import Rule, Scanner
from tts_container.text.normalization.word_rules import roman_value

CATEGORIES = {
    "cardinal", "negative", "decimal", "ordinal", "fraction", "range", "score", "money", "unit", "time",
    "date", "year", "decade", "phone", "version", "ip", "roman", "url", "email", "file", "abbreviation",
    "symbol", "code", "other",
}  # fmt: skip


@pytest.mark.parametrize(("category", "written", "expected"), CASES, ids=[c[1] for c in CASES])
def test_reads_the_way_a_person_would(category: str, written: str, expected: str) -> None:
    assert words(normalize(written)) == words(expected)


def test_the_test_set_is_broad() -> None:
    counts = Counter(category for category, _, _ in CASES)
    assert len(CASES) >= 150
    assert set(counts) == CATEGORIES
    assert len({written for _, written, _ in CASES}) == len(CASES)
    assert set(WHISPER_SUBSET) <= {written for _, written, _ in CASES}


def test_each_written_word_keeps_its_spoken_words() -> None:
    assert spoken_words("Drive 60 km/h.") == (
        Reading("Drive", "Drive"),
        Reading("60", "sixty"),
        Reading("km/h", "kilometers per hour"),
    )
    assert spoken_words("Call (555) 123-4567 now.") == (
        Reading("Call", "Call"),
        Reading("555", "five five five,"),
        Reading("123-4567", "one two three, four five six seven"),
        Reading("now", "now"),
    )


def test_a_rewrite_spanning_words_is_one_caption_word() -> None:
    readings = spoken_words("Ping 10.0.0.1:80 or 3 - 5 times.")
    assert Reading("10.0.0.1:80", "one zero dot zero dot zero dot one colon eight zero") in readings
    assert Reading("3 - 5", "three to five") in readings


def test_rewritten_word_at_maps_spoken_offsets_back() -> None:
    normalized = normalize_text("It weighs 3.5kg today.")
    at = normalized.spoken.index("kilograms")
    assert normalized.rewritten_word_at(at) == (2, "3.5kg")
    assert normalized.rewritten_word_at(normalized.spoken.index("weighs")) is None
    assert normalized.rewritten_word_at(normalized.spoken.index("today")) is None


def test_british_english_says_dates_day_first_and_keeps_and() -> None:
    assert words(normalize("Due 3/4/2025.", "en-gb")) == words("Due the third of April twenty twenty five.")
    assert words(normalize("She read 101 books.", "en-gb")) == words("She read one hundred and one books.")
    # after "the" the date keeps one article: "by the third of April", never "by the the third"
    assert words(normalize("Due by the 3/4/2025.", "en-gb")) == words(
        "Due by the third of April twenty twenty five."
    )
    assert words(normalize("The 2025-03-04 build.", "en-gb")) == words(
        "The fourth of March twenty twenty five build."
    )
    assert words(normalize("Call me on the 12/25.")) == words("Call me on the December twenty fifth.")
    assert words(normalize("Due 3/4/2025.", "en-us")) == words("Due March fourth, twenty twenty five.")
    # a day of 13 or more next to a month is a date without a cue, day first in Britain
    assert words(normalize("Her birthday is 22/11.", "en-gb")) == words(
        "Her birthday is the twenty second of November."
    )
    assert words(normalize("Her birthday is 11/22.", "en-us")) == words(
        "Her birthday is November twenty second."
    )
    assert words(normalize("Open 24/7.", "en-gb")) == words("Open twenty four seven.")


@pytest.mark.parametrize("dialect", ["fr-fr", "es", "hi", "it", "pt-br"])
def test_other_languages_pass_through_untouched(dialect: str) -> None:
    text = "Il a 5 ans, 3,5 kg et 20 € le 3/4/2025."
    assert normalize(text, dialect) == text
    assert all(r.written == r.spoken for r in spoken_words(text, dialect))


def test_the_pronoun_i_is_never_a_numeral() -> None:
    for text in ("I think I can.", "Then I left.", "Sure, I will.", "So did I.", "Rocky and I went."):
        assert words(normalize(text)) == words(text)
    assert words(normalize("Chapter I begins, and I read it.")) == words("Chapter one begins, and I read it.")


def test_roman_values() -> None:
    assert [roman_value(r) for r in ("I", "IV", "XIV", "XLIX", "MCMXC", "IIII", "VX", "")] == [
        1, 4, 14, 49, 1990, None, None, None,
    ]  # fmt: skip


def test_bad_input_is_refused_with_a_clear_error() -> None:
    with pytest.raises(TypeError, match="text must be a str, not bytes"):
        normalize(b"5 km")  # type: ignore[arg-type]


def test_a_rule_with_a_back_reference_is_refused_when_the_scanner_is_built() -> None:
    rule = Rule("doubled", re.compile(r"(?P<x>a)(?P=x)"), lambda match, british: None)
    with pytest.raises(ValueError, match="'doubled': back references"):
        Scanner([rule])


_TOKENS = st.sampled_from(
    ["5", "3.5", "-2", "1,000", "12:30", "3/4", "1990s", "22nd", "km/h", "kg", "%", "°C", "$", "€", "£", "¥",
     "pm", "a.m.", "St.", "Dr.", "IV", "I", "www.x.com", "a@b.io", "main.py", "+", "&", "#", "@", "~", "±",
     "→", "×", "x", "-", "–", "/", ":", ".", ",", "(", ")", "'", "\"", "v2", "555-0123", "192.168.0.1",
     "March", "the", "Chapter", "Louis", "in", "ft", "00", "0", "½", "²", "1500", "2024", "−", "e", "**",
     "-".join(["x"] * 12)]
)  # fmt: skip


@given(st.lists(st.tuples(_TOKENS, st.sampled_from(["", " ", "  "])), max_size=14))
def test_any_mix_is_read_without_a_digit_left_and_every_word_kept(parts: list[tuple[str, str]]) -> None:
    text = "".join(token + space for token, space in parts)
    normalized = normalize_text(text)
    assert not re.search(r"\d", normalized.spoken), (text, normalized.spoken)
    readings = normalized.readings()
    assert all(r.written and r.written in text for r in readings)
    assert len(readings) <= len(text.split())  # a rewrite may join written words, never invent one


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("#pm5", "hashtag pm five"),  # a hashtag's digits are read, not left for G2P
        ("5×53.5", "five by fifty three point five"),  # a four-character side that is no screen size
        ("²@3.5", None),  # a superscript digit is no digit for int(): read without a crash
        # a year-range number with a sign was parsed with it: a crash, answered engine_failed (fault battery)
        ("We have 1200+ stars.", "We have one thousand two hundred plus stars."),
        ("It was −1500 meters down.", "It was minus one thousand five hundred meters down."),
        ("about ±1000 units", "about plus or minus one thousand units"),
    ],
)
def test_inputs_the_property_test_found_are_read(written: str, spoken: str | None) -> None:
    normalized = normalize_text(written)
    assert not re.search(r"\d", normalized.spoken), normalized.spoken
    if spoken is not None:
        assert normalized.spoken == spoken
