"""SpeechTextFilter / clean_for_speech: markdown and emoji out, the words in, however the text arrives."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strands_kokoro.chunker import IncrementalSentenceChunker
from strands_kokoro.speech_text import SpeechTextFilter, clean_for_speech, is_emoji_char


def stream(pieces: list[str]) -> str:
    f = SpeechTextFilter()
    return "".join(f.feed(p) for p in pieces) + f.flush()


def pieces_of(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 7)
        out.append(text[i : i + n])
        i += n
    return out


CASES = [
    ("Some **bold**, __strong__, *it*, _em_ and ~~gone~~ text.", "Some bold, strong, it, em and gone text."),
    ("# Title", "Title"),
    ("### Deep heading ", "Deep heading"),
    ("- one\n* two\n+ three\n• four", "one two three four"),
    ("1. first\n2) second", "1. first 2) second"),
    ("> quoted\n>> nested", "quoted nested"),
    ("| Name | Age |\n|:---|---:|\n| Bob | 5 |", "Name, Age Bob, 5"),
    ("Read [the docs](https://example.com/a_(b)) now.", "Read the docs now."),
    ("A [**bold** link](x.html) and [a ref][1].", "A bold link and a ref."),
    ("Image ![a cat](cat.png) here.", "Image here."),
    ("Note[^1] and <br/> and <https://example.com>.", "Note and and."),
    ("Call `print()` or ``a `b` c``.", "Call print() or a b c."),
    ("Text\n```python\nprint('no')\n```\nAfter.", "Text After."),
    ("~~~\ncode\n~~~", ""),
    ("Hi 🙂! Team 👩‍💻 and family 👨‍👩‍👧‍👦, waves 👋🏽, flags 🇫🇷 🏴󠁧󠁢󠁳󠁣󠁴󠁿.", "Hi! Team and family, waves, flags."),
    ("Press 1️⃣ or #️⃣ or *️⃣ then 2.", "Press or or then 2."),
    ("Love ❤️ and ✨ and ☀️.", "Love and and."),
    (
        "Keep © 2024, 3 < 4, a_b, C# and 5 ~ 6 and \\*stars\\*.",
        "Keep © 2024, 3 < 4, a b, C# and 5 ~ 6 and *stars*.",
    ),
    ("[brackets] stay [1]", "[brackets] stay [1]"),
    ("---\n***\nText", "Text"),
]


@pytest.mark.parametrize(("markdown", "spoken"), CASES, ids=[c[0][:30] for c in CASES])
def test_clean_for_speech(markdown: str, spoken: str) -> None:
    assert clean_for_speech(markdown) == spoken


@pytest.mark.parametrize(("markdown", "spoken"), CASES, ids=[c[0][:30] for c in CASES])
def test_filter_output_does_not_depend_on_fragmentation(markdown: str, spoken: str) -> None:
    whole = stream([markdown])
    assert stream(list(markdown)) == whole
    for seed in range(3):
        assert stream(pieces_of(markdown, seed)) == whole


def test_spans_split_across_fragments_are_held_back_only_until_decided() -> None:
    f = SpeechTextFilter()
    assert f.feed("Say **he") == "Say he"
    assert f.feed("llo** to [my fr") == "llo to "  # the link is undecided
    assert f.feed("iend](https://x.y") == ""
    assert f.feed(") now") == "my friend now"
    assert f.flush() == ""


def test_structural_lines_end_with_a_blank_line_so_the_chunker_splits_there() -> None:
    spoken = stream(["## Install\n- run `uv sync`\n- then test\nDone"])
    chunker = IncrementalSentenceChunker()
    chunks = chunker.feed(spoken)
    chunks.append(chunker.flush() or "")
    assert chunks == ["Install", "run uv sync", "then test", "Done"]


def test_filter_then_chunker_never_speaks_code() -> None:
    markdown = "Here is code:\n```js\nalert('Hi. There.');\n```\nThat is all. Bye 👋."
    chunker = IncrementalSentenceChunker()
    f = SpeechTextFilter()
    sentences = []
    for piece in pieces_of(markdown, 7):
        sentences += chunker.feed(f.feed(piece))
    sentences += chunker.feed(f.flush())
    sentences.append(chunker.flush() or "")
    assert [clean_for_speech(s) for s in sentences] == ["Here is code:", "That is all.", "Bye."]


def test_an_unclosed_span_is_read_as_text_at_the_end() -> None:
    assert stream(["a [b c"]) == "a [b c"
    assert stream(["x < y"]) == "x < y"


def test_emoji_classification() -> None:
    for ch in "🙂👩💻🇫✨❤☀\u200d\ufe0f\u20e3🏽":
        assert is_emoji_char(ch), ch
    for ch in "aZ9#*©®™→€é中。":
        assert not is_emoji_char(ch), ch


def test_bad_input_type() -> None:
    with pytest.raises(TypeError, match="str"):
        SpeechTextFilter().feed(None)  # type: ignore[arg-type]


MARKDOWN_BITS = [
    "*", "**", "_", "`", "```", "\n", "# ", "- ", "1. ", "|", "[", "](", ")", "![", "<", ">", "~~", "\\",
    "🙂", "👩‍💻", "1️⃣", "word", " ", "é", "http://x.y",
]  # fmt: skip
markdownish = st.lists(st.one_of(st.sampled_from(MARKDOWN_BITS), st.text(max_size=5)), max_size=40).map(
    "".join
)


@settings(max_examples=300, deadline=None)
@given(text=markdownish, data=st.data())
def test_property_fragmentation_invariant_and_no_emoji_out(text: str, data) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=20)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    whole = stream([text])
    assert stream(pieces) == whole
    assert not any(is_emoji_char(c) for c in whole)
