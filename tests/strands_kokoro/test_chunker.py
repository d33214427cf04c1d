"""IncrementalSentenceChunker: one test per rule, fed whole, one character at a time and in random
pieces; hypothesis properties for what must hold on any text (nothing lost, same output whatever the
fragmentation, bounded holdback, max_chars)."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strands_kokoro.chunker import WINDOW, IncrementalSentenceChunker


def run(pieces: list[str], **options: int) -> list[str]:
    chunker = IncrementalSentenceChunker(**options)
    out: list[str] = []
    for piece in pieces:
        out.extend(chunker.feed(piece))
    rest = chunker.flush()
    if rest is not None:
        out.append(rest)
    return out


def random_pieces(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    pieces, i = [], 0
    while i < len(text):
        n = rng.randint(1, 9)
        pieces.append(text[i : i + n])
        i += n
    return pieces


def segment_every_way(text: str, **options: int) -> list[str]:
    """Segment whole, per character and in random pieces; assert all agree; return the result."""
    whole = run([text], **options)
    assert run(list(text), **options) == whole
    for seed in range(3):
        assert run(random_pieces(text, seed), **options) == whole
    return whole


RULES = [
    # sentence ends
    ("Hello World. My name is Jonas.", ["Hello World.", "My name is Jonas."]),
    ("What is your name? My name is Jonas.", ["What is your name?", "My name is Jonas."]),
    ("There it is! I found it.", ["There it is!", "I found it."]),
    ("Hello?! Is that you?", ["Hello?!", "Is that you?"]),
    ("I never meant that.... She left the store.", ["I never meant that....", "She left the store."]),
    ("Wait… Then it rang.", ["Wait…", "Then it rang."]),
    (
        'She turned to him, "This is great." She held it.',
        ['She turned to him, "This is great."', "She held it."],
    ),
    ("(He had left.) We stayed.", ["(He had left.)", "We stayed."]),
    ("It was a gas. [1] It burns.", ["It was a gas. [1]", "It burns."]),
    ("First paragraph without a period\n\nSecond one", ["First paragraph without a period", "Second one"]),
    ("Windows line ends\r\n\r\nstill break", ["Windows line ends", "still break"]),
    ("你好。我很好！你呢？", ["你好。", "我很好！", "你呢？"]),
    ("「こんにちは。」次です。", ["「こんにちは。」", "次です。"]),
    # not sentence ends
    ("Dr. Watson met Mr. Holmes and Mrs. Hudson.", ["Dr. Watson met Mr. Holmes and Mrs. Hudson."]),
    (
        "Prof. Smith lives on St. James St. near Mt. Fuji.",
        ["Prof. Smith lives on St. James St. near Mt. Fuji."],
    ),
    ("Pitt, Briggs & Co. at noon. Fine.", ["Pitt, Briggs & Co. at noon.", "Fine."]),
    (
        "Fruit, e.g. apples, i.e. red ones, etc. are fine.",
        ["Fruit, e.g. apples, i.e. red ones, etc. are fine."],
    ),
    ("We met at 5 a.m. and left at 6 p.m. on time.", ["We met at 5 a.m. and left at 6 p.m. on time."]),
    ("See No. 5 and p. 55 please.", ["See No. 5 and p. 55 please."]),
    ("J. R. R. Tolkien wrote it. He was English.", ["J. R. R. Tolkien wrote it.", "He was English."]),
    ("My name is Jonas E. Smith.", ["My name is Jonas E. Smith."]),
    ("I work for the U.S. Government in Virginia.", ["I work for the U.S. Government in Virginia."]),
    ("I live in the U.S. How about you?", ["I live in the U.S.", "How about you?"]),
    ("She studied at M.I.T. last year.", ["She studied at M.I.T. last year."]),
    ("It costs $100.00 or 3.5 percent.", ["It costs $100.00 or 3.5 percent."]),
    (
        "Install version 2.4.1 from 10.0.0.1 at 10:30 today.",
        ["Install version 2.4.1 from 10.0.0.1 at 10:30 today."],
    ),
    (
        "Open https://example.com/a.html now. Then mail jane.doe@example.com.",
        [
            "Open https://example.com/a.html now.",
            "Then mail jane.doe@example.com.",
        ],
    ),
    ("Edit config.yaml and main.py first.", ["Edit config.yaml and main.py first."]),
    ("1. The first item 2. The second item", ["1. The first item", "2. The second item"]),
    ("1) The first item 2) The second item", ["1) The first item", "2) The second item"]),
    ("a. The first item b. The second item", ["a. The first item", "b. The second item"]),
    ("• 9. The first item • 10. The second item", ["• 9. The first item", "• 10. The second item"]),
    (
        "She works at Yahoo! in the accounting department.",
        ["She works at Yahoo! in the accounting department."],
    ),
    (
        "I wasn’t really ... well, what I mean...see . . . I didn’t mean it.",
        ["I wasn’t really ... well, what I mean...see . . . I didn’t mean it."],
    ),
    ('"How many? I don\'t know." Then silence.', ['"How many? I don\'t know."', "Then silence."]),
    ("That is JFK Jr.'s book.", ["That is JFK Jr.'s book."]),
    # markdown structure, for text that did not go through SpeechTextFilter
    ("Steps:\n- install it\n- run it", ["Steps:", "- install it", "- run it"]),
    ("## Setup\nRun the script.", ["## Setup", "Run the script."]),
]


@pytest.mark.parametrize(("text", "expected"), RULES, ids=[r[0][:40] for r in RULES])
def test_rule(text: str, expected: list[str]) -> None:
    assert segment_every_way(text) == expected


def test_fenced_code_block_is_one_chunk_never_split() -> None:
    text = "Run this. Then:\n```python\nx = 1. y = 2\nprint('a. B. C.')\n\nz = 3\n```\nDone. Bye."
    assert segment_every_way(text) == [
        "Run this.",
        "Then:",
        "```python\nx = 1. y = 2\nprint('a. B. C.')\n\nz = 3\n```",
        "Done.",
        "Bye.",
    ]


def test_code_block_at_the_very_start_and_unclosed_at_the_end() -> None:
    assert segment_every_way("```\na. B.\n```\nOk.") == ["```\na. B.\n```", "Ok."]
    assert segment_every_way("Hi.\n~~~\nnever. closed.") == ["Hi.", "~~~\nnever. closed."]


def test_feed_returns_sentences_as_soon_as_they_are_certain() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("Hello there.") == []  # "." might be "...", or followed by lowercase
    assert chunker.feed(" How") == ["Hello there."]  # a capital after the space settles it
    assert chunker.feed(" are you? I") == ["How are you?"]
    assert chunker.flush() == "I"
    assert chunker.flush() is None


def test_flush_resets_for_the_next_segment() -> None:
    chunker = IncrementalSentenceChunker(first_chunk_words=2)
    assert chunker.feed("One two, three four. ") == ["One two,"]
    assert chunker.flush() == "three four."
    assert chunker.feed("Five six, seven. ") == ["Five six,"]  # the first chunk rule applies again


def test_first_chunk_words_cuts_only_the_first_chunk_at_a_clause_mark() -> None:
    text = "Well, the answer is simple, really: we wait; then we go. After that, we rest, eat and sleep."
    assert segment_every_way(text, first_chunk_words=4) == [
        "Well, the answer is simple,",
        "really: we wait; then we go.",
        "After that, we rest, eat and sleep.",
    ]
    assert segment_every_way("One two three—four five. Six.", first_chunk_words=3) == [
        "One two three—",
        "four five.",
        "Six.",
    ]
    # "1,000" and "10:30" are not clause marks
    assert segment_every_way("We sold 1,000 units at 10:30 today, sadly.", first_chunk_words=4) == [
        "We sold 1,000 units at 10:30 today,",
        "sadly.",
    ]


def test_first_chunk_words_falls_back_to_a_word_boundary_after_twice_n_words() -> None:
    text = "So here is the thing you need to know about it. Then more words follow here without end."
    assert segment_every_way(text, first_chunk_words=3) == [
        "So here is the thing you",  # 2N = 6 words and no clause mark: cut at the space after them
        "need to know about it.",
        "Then more words follow here without end.",  # only the first chunk
    ]
    # a clause mark by then wins; a sentence end before 2N words leaves nothing to cut
    assert segment_every_way("One two three, four five six seven.", first_chunk_words=3) == [
        "One two three,",
        "four five six seven.",
    ]
    assert segment_every_way("One two. Three four five six seven eight.", first_chunk_words=2) == [
        "One two.",
        "Three four five six seven eight.",
    ]
    # never inside a URL or a number: only at whitespace; a newline is whitespace too
    url = "Go to https://example.com/a,b;c:d.html?x=1,000 now please. Ok."
    assert segment_every_way(url, first_chunk_words=1) == [
        "Go to",
        "https://example.com/a,b;c:d.html?x=1,000 now please.",
        "Ok.",
    ]
    assert segment_every_way("a b 3.14159\nc d.", first_chunk_words=1) == ["a b", "3.14159\nc d."]


def test_first_chunk_word_cut_waits_for_the_space_after_the_word() -> None:
    chunker = IncrementalSentenceChunker(first_chunk_words=1)
    assert chunker.feed("Hello wor") == []  # "wor" may go on in the next fragment
    assert chunker.feed("ld") == []
    assert chunker.feed(" and") == ["Hello world"]
    assert chunker.flush() == "and"
    assert chunker.feed("Again the") == []  # the next segment's first chunk is cut again
    assert chunker.feed("se words ") == ["Again these"]
    assert chunker.flush() == "words"


def test_max_chars_prefers_a_clause_boundary_then_a_word_boundary() -> None:
    text = "This sentence is long, it has a comma in the middle and goes on and on without an end. Short."
    chunks = segment_every_way(text, max_chars=40)
    assert chunks == [
        "This sentence is long,",
        "it has a comma in the middle and goes on",
        "and on without an end.",
        "Short.",
    ]
    assert all(len(c) <= 40 for c in chunks)
    assert segment_every_way("x" * 25, max_chars=10) == ["x" * 10, "x" * 10, "x" * 5]


def test_long_sentence_keeps_the_working_string_small() -> None:
    """The scan position moves on; scanned text leaves the working string (what keeps feeds O(1))."""
    chunker = IncrementalSentenceChunker()
    for _ in range(20_000):
        assert chunker.feed(" word") == []
    assert len(chunker._buf) < 10_000  # 100 KB fed, still one unfinished sentence
    rest = chunker.flush()
    assert rest is not None and len(rest) == 20_000 * 5 - 1


def test_bad_arguments_are_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="first_chunk_words"):
        IncrementalSentenceChunker(first_chunk_words=0)
    with pytest.raises(ValueError, match="max_chars"):
        IncrementalSentenceChunker(max_chars=0)
    with pytest.raises(TypeError, match="str"):
        IncrementalSentenceChunker().feed(b"bytes")  # type: ignore[arg-type]


# -- properties -------------------------------------------------------------------------------------

TOKENS = [
    "Dr.", "Mr. ", "U.S.", "a.m.", "e.g.", "etc.", "J.", " I. ", "1.", " 2. ", "b.", "...", ". . .", "…",
    "?!", "!", "?", ".", ". ", " . ", "\n", "\n\n", "```", "\n```\n", "~~~", '"', "'", "''", " ' ", "“",
    "”", "`", "(", ")", "[1]", "[", "]", "•", "⁃", ",", ";", ":", "—", "。", "！", "」", "The ", "the ",
    "Smith ", "he ", "3.5", "$100.00", "example.com", "# ", "- ", "| ", "🙂", "é", " ", "  ", "\t",
]  # fmt: skip
texts = st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=6)), max_size=60).map("".join)
pathological = st.one_of(
    texts,
    st.text(alphabet=".!?… \n\"'”)", max_size=300),  # marks and quotes only
    st.integers(1, 400).map(lambda n: "!" * n + " Next. Done"),  # a run longer than the window
    st.integers(1, 400).map(lambda n: "Hello." + " " * n + "World. Again"),
)
options = st.sampled_from(
    [
        {},
        {"first_chunk_words": 3},
        {"first_chunk_words": 1},
        {"max_chars": 30},
        {"first_chunk_words": 1, "max_chars": 12},
        {"first_chunk_words": 2, "max_chars": 30},
    ]
)


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=pathological, opts=options, data=st.data())
def test_nothing_lost_and_same_output_whatever_the_fragmentation(text: str, opts: dict, data) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=30)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    whole = run([text], **opts)
    assert run(pieces, **opts) == whole
    assert run(list(text), **opts) == whole
    assert squash("".join(whole)) == squash(text)  # nothing lost, nothing added
    assert all(chunk == chunk.strip() and chunk for chunk in whole)
    if "max_chars" in opts:
        assert all(len(c) <= opts["max_chars"] for c in whole[:-1] if "```" not in c and "~~~" not in c)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, n=st.integers(1, 4), seed=st.integers(0, 1000))
def test_first_chunk_word_cut_is_fragmentation_invariant(text: str, n: int, seed: int) -> None:
    """Many-word texts so the 2N-word fallback fires; two segments through one chunker."""
    text = "alpha beta gamma delta epsilon zeta eta theta " + text
    chunker = IncrementalSentenceChunker(first_chunk_words=n)

    def segments(first: list[str], second: list[str]) -> list[list[str | None]]:
        result: list[list[str | None]] = []
        for pieces in (first, second):
            out: list[str | None] = []
            for piece in pieces:
                out.extend(chunker.feed(piece))
            out.append(chunker.flush())
            result.append(out)
        return result

    whole = segments([text], [text])
    assert whole[0] == whole[1]  # flush() resets: the second segment's first chunk is cut alike
    assert segments(random_pieces(text, seed), list(text)) == whole


@settings(max_examples=200, deadline=None)
@given(text=texts, seed=st.integers(0, 1000))
def test_holdback_is_bounded_by_the_window(text: str, seed: int) -> None:
    """A sentence ending at b is out once WINDOW characters past b have been fed, whatever the pieces."""
    chunker = IncrementalSentenceChunker()
    settled = []
    for piece in [text]:
        settled.extend(chunker.feed(piece))
    ends, cursor = [], 0
    for sentence in settled:  # each is a stripped slice of the text, in order
        cursor = text.index(sentence, cursor) + len(sentence)
        ends.append(cursor)
    stream = IncrementalSentenceChunker()
    emitted, fed = 0, 0
    for piece in random_pieces(text, seed):
        emitted += len(stream.feed(piece))
        fed += len(piece)
        due = sum(1 for end in ends if end + WINDOW <= fed)
        assert emitted >= due
