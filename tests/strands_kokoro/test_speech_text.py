"""SpeechTextFilter / clean_for_speech: markdown and emoji out, the words in, however the text arrives.

The filter owns markdown; the chunker after it owns sentences. What a listener hears is tested on the
production path: ``SpeechTextFilter.feed`` then ``IncrementalSentenceChunker.feed``, the chunker's
sentences sent as they are (no ``clean_for_speech`` after)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strands_kokoro.text.chunker import IncrementalSentenceChunker
from strands_kokoro.text.speech_text import SpeechTextFilter, clean_for_speech, is_emoji_char


def stream(pieces: list[str]) -> str:
    f = SpeechTextFilter()
    return "".join(f.feed(p) for p in pieces) + f.flush()


def speak(pieces: list[str]) -> list[str]:
    """The production path: filter, then chunker; the sentences exactly as they would be sent."""
    f = SpeechTextFilter()
    chunker = IncrementalSentenceChunker()
    sentences = []
    for piece in pieces:
        sentences += chunker.feed(f.feed(piece))
    return sentences + chunker.feed(f.flush()) + chunker.flush()


def speak_every_way(markdown: str) -> list[str]:
    """``speak`` fed whole, per character and in random pieces; all must agree."""
    whole = speak([markdown])
    assert speak(list(markdown)) == whole
    for seed in range(3):
        assert speak(pieces_of(markdown, seed)) == whole
    return whole


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
    ("An escaped \\🙂 emoji is still dropped, \\* kept.", "An escaped \\ emoji is still dropped, * kept."),
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
    assert f.feed("llo** to [my fr") == "llo to"  # the link is undecided (and so is the space)
    assert f.feed("iend](https://x.y") == ""
    assert f.feed(") now") == " my friend now"
    assert f.flush() == ""


def test_structural_lines_end_with_a_blank_line_so_the_chunker_splits_there() -> None:
    spoken = stream(["## Install\n- run `uv sync`\n- then test\nDone"])
    assert spoken == "Install\n\nrun uv sync\n\nthen test\n\nDone"
    assert speak_every_way("## Install\n- run `uv sync`\n- then test\nDone") == [
        "Install",
        "run uv sync",
        "then test",
        "Done",
    ]


MARKDOWN_LINES = [
    # a heading, list item or table row after a line of text starts a chunk of its own, period or not
    ("Steps:\n- install it\n- run it", ["Steps:", "install it", "run it"]),
    # an item that starts with emphasis is an item too (not one run-on line, markers and all)
    (
        "- **Paris** is the capital of France\n- **Berlin** is the capital of Germany\n- _Rome_ too",
        ["Paris is the capital of France", "Berlin is the capital of Germany", "Rome too"],
    ),
    (
        "Pros:\n* **Fast** and light\n* *Cheap*\n\nCons:\n- **Slow** start",
        ["Pros:", "Fast and light", "Cheap", "Cons:", "Slow start"],
    ),
    ("- -5 at night\n- warm\n\n* * *\nDone.", ["-5 at night", "warm", "Done."]),  # a rule is still no item
    # a line that starts with emphasis or an emoji is a label or an item: a sentence of its own
    (
        "**Breakfast**\nOatmeal and coffee.\n\n**Lunch**\nA salad.",
        ["Breakfast", "Oatmeal and coffee.", "Lunch", "A salad."],
    ),
    ("**Step 1:** Preheat the oven\n**Step 2:** Bake", ["Step 1: Preheat the oven", "Step 2: Bake"]),
    ("*Tip*\nUse fresh basil.", ["Tip", "Use fresh basil."]),
    ("✅ Step one done\n🔹 Step two done", ["Step one done", "Step two done"]),
    ("1️⃣ Preheat the oven\n2️⃣ Mix the batter", ["1. Preheat the oven", "2. Mix the batter"]),
    ("Press 1️⃣ now.", ["Press now."]),  # a keycap inside a line is an emoji like any other
    # a quoted line may hold a heading or an item (each of its markers is read as such)
    ("> Here is a quote\n> - item one\n> - item two", ["Here is a quote", "item one", "item two"]),
    ("> ## Tip\n> Drink water.", ["Tip", "Drink water."]),
    ("> **Warning**\n> Do not touch.", ["Warning", "Do not touch."]),
    # a task list's checkboxes are not read; a bracket that is not one still is
    ("- [ ] Buy milk\n- [x] Walk the dog\n1. [X] Pay", ["Buy milk", "Walk the dog", "1. Pay"]),
    ("- [a] b\n- [link](http://x) c", ["[a] b", "link c"]),
    # Windows line ends are line ends: rules and table separators are not read
    ("Intro.\r\n\r\n---\r\n\r\nMore.", ["Intro.", "More."]),
    ("| a | b |\r\n| :-- | --: |\r\n| 1 | 2 |", ["a, b", "1, 2"]),
    ("A line\r\nand the next.", ["A line\nand the next."]),
    # a tag that breaks a line keeps the words on either side apart
    ("| Bob | Likes tea<br>Hates coffee |", ["Bob, Likes tea Hates coffee"]),
    ("First point.<br>Second point.", ["First point.", "Second point."]),
    # a time range, a day or a zone after "a.m."/"p.m." goes on; a new sentence still ends it
    ("- **Hours:** 8 a.m. – 6 p.m.\n- Closed Sundays", ["Hours: 8 a.m. – 6 p.m.", "Closed Sundays"]),
    ("Open 9 a.m. Monday through Friday.", ["Open 9 a.m. Monday through Friday."]),
    ("It is at 3:00 p.m. EST. Be on time.", ["It is at 3:00 p.m. EST.", "Be on time."]),
    ("I woke at 7 a.m. The sun was up.", ["I woke at 7 a.m.", "The sun was up."]),
    # a star between numbers is a product, not emphasis (2*3*4 is not read as 234)
    ("The result of 2*3*4 is 24.", ["The result of 2*3*4 is 24."]),
    ("Multiply 5 * 3 to get 15.", ["Multiply 5 * 3 to get 15."]),
    ("Intro text\n## Setup\nRun the script.", ["Intro text", "Setup", "Run the script."]),
    ("Here are the steps:\n1. Install it\n2. Run it", ["Here are the steps:", "1. Install it", "2. Run it"]),
    ("Results\n| Name | Age |\n|---|---|\n| Bob | 5 |", ["Results", "Name, Age", "Bob, 5"]),
    # a quotation's lines go on as one text; a plain line break is not a sentence end
    ("He said\n> it is fine\n> really.", ["He said\nit is fine\nreally."]),
    ("one line\nand the next. Then more.", ["one line\nand the next.", "Then more."]),
    # fenced code is never spoken, whatever sentences it holds; the text around it is
    (
        "Run this. Then:\n```python\nx = 1. y = 2\nprint('a. B. C.')\n\nz = 3\n```\nDone. Bye.",
        ["Run this.", "Then:", "Done.", "Bye."],
    ),
    ("```\na. B.\n```\nOk.", ["Ok."]),  # a block at the very start
    ("Hi.\n~~~\nnever. closed.", ["Hi."]),  # unclosed at the end
    (
        "Here is code:\n```js\nalert('Hi. There.');\n```\nThat is all. Bye 👋.",
        ["Here is code:", "That is all.", "Bye."],
    ),
]


@pytest.mark.parametrize(("markdown", "sentences"), MARKDOWN_LINES, ids=[m[0][:30] for m in MARKDOWN_LINES])
def test_production_path_speaks_markdown_as_sentences(markdown: str, sentences: list[str]) -> None:
    assert speak_every_way(markdown) == sentences


REMOVALS = [
    # no space is left before punctuation where an emoji, image, tag or footnote was removed
    ("Done ✅. Next.", ["Done.", "Next."]),
    ("That is all. Bye 👋.", ["That is all.", "Bye."]),
    ("Great 🎉 🎉! See you 👋🏽, Bob 🙂?", ["Great!", "See you, Bob?"]),
    ("Look ![a cat](cat.png). It sleeps.", ["Look.", "It sleeps."]),
    ("A line <br/>. And a [link](x.html) [](empty.html).", ["A line.", "And a link."]),
    ("True [^1]; see notes.", ["True; see notes."]),
    ("Press 1️⃣.", ["Press."]),
    ("Wave 👋\n\nBye", ["Wave", "Bye"]),
    # and one space is left between words where something was removed between them
    ("We 🙂 won, 🎉 again.", ["We won, again."]),
    # what is read keeps its space, and so does a space the text itself has before punctuation
    ("Type `.env` and **!** now.", ["Type .env and ! now."]),
    ("It was wrong . Then he left .", ["It was wrong .", "Then he left ."]),
]


@pytest.mark.parametrize(("markdown", "sentences"), REMOVALS, ids=[m[0][:30] for m in REMOVALS])
def test_no_stray_space_where_something_was_removed(markdown: str, sentences: list[str]) -> None:
    assert speak_every_way(markdown) == sentences


@pytest.mark.parametrize("text", ["1.  Otters.", "1)  Otters.", "1.  ", "  12.\t Otters."])
def test_an_ordered_marker_cut_inside_its_spaces_reads_as_when_whole(text: str) -> None:
    """A marker cut between its spaces is decided as it is when whole, not at its first space."""
    whole = stream([text])
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]]) == whole, cut


def test_held_spaces_wait_only_for_the_next_character() -> None:
    f = SpeechTextFilter()
    assert f.feed("Bye ") == "Bye"  # the space waits: an emoji and a period may follow
    assert f.feed("👋") == ""
    assert f.feed(".") == "."
    assert f.feed(" See ") == " See"
    assert f.feed("you") == " you"
    assert f.flush() == ""
    assert f.feed("Trailing  ") == "Trailing"
    assert f.flush() == "  "  # nothing removed: the text is kept as it was
    assert f.feed("Gone 🙂 ") == "Gone"
    assert f.flush() == ""  # the space before a removal at the end goes


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
    sentences = speak([text])
    assert speak(pieces) == sentences  # the production path, sentence by sentence
    assert all(s == s.strip() and s for s in sentences)


REMOVABLE_BITS = [
    "🙂", "👩‍💻", "1️⃣", "<br/>", "![a](b.png)", "[^1]", "[](x)", "Bye", "ok", " ", "\n", *".,!?;:"
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(bits=st.lists(st.sampled_from(REMOVABLE_BITS), max_size=30), seed=st.integers(0, 1000))
def test_property_no_space_before_punctuation_that_the_text_did_not_have(bits: list[str], seed: int) -> None:
    """Removing an emoji, image, tag or footnote never leaves a space before punctuation."""
    text = "".join(bits)
    sentences = speak(pieces_of(text, seed))
    assert sentences == speak([text])
    for sentence in sentences:
        for p in ".,!?;:":
            assert " " + p not in sentence or " " + p in text, sentence
