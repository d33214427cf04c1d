"""The text rules both ends apply are written once: which characters are emoji, what a blank line is."""

from __future__ import annotations

import re

import pytest

from strands_kokoro.text.blank_lines import BLANK_LINE, PARAGRAPH_BREAK, blank_line_follows, has_blank_line
from strands_kokoro.text.emoji_chars import SAID_EVERYWHERE, emoji_class, is_emoji_char, pictograph_class
from strands_kokoro.text.speech_text import SpeechTextFilter, clean_for_speech


def test_what_an_end_keeps_is_cut_out_of_the_emoji_class() -> None:
    pattern = re.compile(f"[{emoji_class(SAID_EVERYWHERE)}]")
    assert pattern.match("👋") and pattern.match("\u200d") and pattern.match("\ufe0f")
    assert not any(pattern.match(ch) for ch in SAID_EVERYWHERE)
    assert re.compile(f"[{emoji_class()}]").match("©")
    assert not re.compile(f"[{pictograph_class()}]").match("\u200d")  # a component, no pictograph


@pytest.mark.parametrize("ch", ["👋", "✅", "🇫", "\u200d", "\U000e0067"])
def test_emoji_characters(ch: str) -> None:
    assert is_emoji_char(ch)
    assert not is_emoji_char(ch, kept=ch)


@pytest.mark.parametrize(
    ("gap", "blank"),
    [("\n\n", True), ("\n \t\r\n", True), ("\r\n\r\n", True), ("\n", False), (" \n ", False)],
)
def test_a_blank_line_is_two_line_breaks_with_only_spaces_between(gap: str, blank: bool) -> None:
    assert has_blank_line(gap) is blank
    assert (re.fullmatch(BLANK_LINE, gap) is not None) is blank
    if gap.startswith("\n"):
        assert blank_line_follows(lambda k: gap[k] if k < len(gap) else "", 1) is blank


def test_the_filter_ends_a_heading_with_the_blank_line_the_chunker_ends_at() -> None:
    f = SpeechTextFilter()
    out = f.feed("# Getting started\nInstall it.") + f.flush()
    assert PARAGRAPH_BREAK in out and has_blank_line(out[out.index("\n") :])
    assert clean_for_speech("Bye 👋.") == "Bye."
