"""IncrementalSentenceChunker: one test per rule, fed whole, one character at a time and in random
pieces; hypothesis properties for what must hold on any text (nothing lost, sentences verbatim and in
order, same output whatever the fragmentation, bounded holdback, ``settled``, max_chars).

Markdown is not the chunker's: its handling is tested on the production path (SpeechTextFilter then
the chunker) in test_speech_text.py."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strands_kokoro.text.chunker import WINDOW, IncrementalSentenceChunker


def run(pieces: list[str], **options: int) -> list[str]:
    chunker = IncrementalSentenceChunker(**options)
    out: list[str] = []
    for piece in pieces:
        out.extend(chunker.feed(piece))
    return out + chunker.flush()


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
    # interrobangs end a sentence like "?" does: before any capital, "I" included
    ("What?! I left.", ["What?!", "I left."]),
    ("Really!? I thought so. Fine.", ["Really!?", "I thought so.", "Fine."]),
    ("You did what?!? I never did.", ["You did what?!?", "I never did."]),
    ("No way!! I refuse.", ["No way!!", "I refuse."]),
    ("Really‽ Then we left.", ["Really‽", "Then we left."]),
    ('"What?!" I asked.', ['"What?!"', "I asked."]),
    ("Why ?! I said so.", ["Why ?!", "I said so."]),
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
    # Chinese and Japanese: no space between sentences, full-width marks, their runs, their brackets
    ("今日は晴れです。明日は雨でしょう！本当？", ["今日は晴れです。", "明日は雨でしょう！", "本当？"]),
    ("本当？！はい。", ["本当？！", "はい。"]),
    ("他说：“我们走吧。”然后走了。", ["他说：“我们走吧。”", "然后走了。"]),
    ("「はい」と言った。『いいえ』と答えた。", ["「はい」と言った。", "『いいえ』と答えた。"]),
    ("价格是3.5元。好的（真的！）下次见。", ["价格是3.5元。", "好的（真的！）", "下次见。"]),
    ("你好!我很好?你呢?", ["你好!", "我很好?", "你呢?"]),  # ASCII marks before a Han character
    ("我喜欢Python.你呢?", ["我喜欢Python.", "你呢?"]),
    ("I said hi. 你好。Bye.", ["I said hi.", "你好。", "Bye."]),
    # not sentence ends
    ("这是一个问题……真的吗？", ["这是一个问题……真的吗？"]),  # an ellipsis goes on
    ("版本3.你好", ["版本3.你好"]),  # a digit's period is no sentence end
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
    ("Seriously?! you mean it.", ["Seriously?! you mean it."]),  # lowercase goes on, as after "?"
    ("Well... I never meant it.", ["Well... I never meant it."]),  # a dots-only ellipsis: a stammer
    # spaced (or dotted) initials before a surname are one name, wherever the name stands
    ("I read T. S. Eliot today. He was a poet.", ["I read T. S. Eliot today.", "He was a poet."]),
    ("We read J. R. R. Tolkien and C. S. Lewis.", ["We read J. R. R. Tolkien and C. S. Lewis."]),
    ("The author is E. B. White, who wrote it.", ["The author is E. B. White, who wrote it."]),
    ("She loves E. B. White. He wrote well.", ["She loves E. B. White.", "He wrote well."]),
    (
        "Poems by W. E. B. Du Bois (and T.S. Eliot) sell.",
        ["Poems by W. E. B. Du Bois (and T.S. Eliot) sell."],
    ),
    ("We read J.R.R. Tolkien today.", ["We read J.R.R. Tolkien today."]),
    ('He quoted "T. S. Eliot" twice.', ['He quoted "T. S. Eliot" twice.']),
    ("I work for the U.S. Government in Virginia.", ["I work for the U.S. Government in Virginia."]),
    ("I live in the U.S. How about you?", ["I live in the U.S.", "How about you?"]),
    # ...and a capital's period still ends a sentence before a typical opener, or after a country
    ("I met him at 5 P.M. Then we left.", ["I met him at 5 P.M.", "Then we left."]),
    ("We left at 5 P. M. Then it rained.", ["We left at 5 P. M.", "Then it rained."]),
    ("We chose Plan B. Then we left.", ["We chose Plan B.", "Then we left."]),
    ("We took vitamin C. Doctors agree.", ["We took vitamin C.", "Doctors agree."]),
    ("He moved to the U. S. A. Bob stayed.", ["He moved to the U. S. A.", "Bob stayed."]),
    ("It was you and I. Did you see Albert I. Jones?", ["It was you and I.", "Did you see Albert I. Jones?"]),
    # ambiguous: "Plan B." before a name reads like "Jonas E. Smith"; a missed split costs less
    # (the period is still read as a pause) than a split inside a name, so it stays one sentence
    ("We chose Plan B. Bob agreed.", ["We chose Plan B. Bob agreed."]),
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
]


@pytest.mark.parametrize(("text", "expected"), RULES, ids=[r[0][:40] for r in RULES])
def test_rule(text: str, expected: list[str]) -> None:
    assert segment_every_way(text) == expected


def test_feed_returns_sentences_as_soon_as_they_are_certain() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("Hello there.") == []  # "." might be "...", or followed by lowercase
    assert chunker.feed(" How") == ["Hello there."]  # a capital after the space settles it
    assert chunker.feed(" are you? I") == ["How are you?"]
    assert chunker.flush() == ["I"]
    assert chunker.flush() == []


def test_flush_returns_each_sentence_left_and_resets_for_the_next_segment() -> None:
    chunker = IncrementalSentenceChunker()
    # "C." waits for the whole next word ("Do" opens a sentence, "Dot" may be a surname)
    assert chunker.feed("One two. We took vitamin C. Do") == ["One two."]
    assert chunker.flush() == ["We took vitamin C.", "Do"]  # two sentences, not one joined string
    assert chunker.settled == 0
    assert chunker.feed("  \n ") == []
    assert chunker.flush() == []  # only whitespace left: nothing
    assert chunker.feed("Take vitamin C. Do") == []  # a new segment: "C." waits as before
    assert chunker.feed("ctors agree. Ok") == ["Take vitamin C.", "Doctors agree."]
    assert chunker.flush() == ["Ok"]


def test_settled_is_the_scan_position() -> None:
    chunker = IncrementalSentenceChunker()
    assert chunker.settled == 0
    steps = [  # fragment, sentences it completes, settled after it
        ("Hello wor", [], 9),  # no mark: all of it is decided (part of the unfinished sentence)
        ("ld.", [], 11),  # stops on the ".": its verdict waits for what follows
        (" Dr", ["Hello world."], 15),
        (".", [], 15),  # "Dr." then a name, or a new sentence?
        (" Who", [], 20),  # a title before a capital: no boundary, scan on
        (" is it? I", ["Dr. Who is it?"], 29),
        (" am.", [], 32),
    ]
    for fragment, sentences, settled in steps:
        assert (chunker.feed(fragment), chunker.settled) == (sentences, settled)
    assert chunker.flush() == ["I am."]
    assert chunker.settled == 0


def test_settled_stays_before_a_list_item_that_may_still_begin() -> None:
    """``1. One 2`` + ``. Two``: a boundary may go before the "2", so the scan waits there."""
    chunker = IncrementalSentenceChunker()
    assert chunker.feed("1. One 2") == []
    assert chunker.settled == 7  # before "2", not after it
    assert chunker.feed(". Two") == ["1. One"]
    assert chunker.settled >= 7
    assert chunker.flush() == ["2. Two"]


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
    assert chunker.settled == 20_000 * 5
    [rest] = chunker.flush()
    assert len(rest) == 20_000 * 5 - 1


def test_bad_arguments_are_rejected_clearly() -> None:
    with pytest.raises(TypeError):
        IncrementalSentenceChunker(6)  # type: ignore[call-arg]  # max_chars is keyword-only
    with pytest.raises(ValueError, match="max_chars"):
        IncrementalSentenceChunker(max_chars=0)
    with pytest.raises(TypeError, match="str"):
        IncrementalSentenceChunker().feed(b"bytes")  # type: ignore[arg-type]


# -- properties -------------------------------------------------------------------------------------

TOKENS = [
    "Dr.", "Mr. ", "U.S.", "a.m.", "e.g.", "etc.", "J.", " I. ", "1.", " 2. ", "b.", "...", ". . .", "…",
    "?!", "!?", "?!?", "‽", "!", "?", ".", ". ", " . ", "\n", "\n\n", "```", "~~~", '"', "'", "''", " ' ",
    "“", "”", "`", "(", ")", "[1]", "[", "]", "•", "⁃", ",", ";", ":", "—", "。", "！", "」", "The ",
    "the ", "Smith ", "he ", "T. S. ", "E. B. ", "T.S. ", "I ", "3.5", "$100.00", "example.com", "# ",
    "- ", "| ", "🙂", "é", " ", "  ", "\t", "\r\n",
]  # fmt: skip
texts = st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=6)), max_size=60).map("".join)
pathological = st.one_of(
    texts,
    st.text(alphabet=".!?… \n\"'”)", max_size=300),  # marks and quotes only
    st.integers(1, 400).map(lambda n: "!" * n + " Next. Done"),  # a run longer than the window
    st.integers(1, 400).map(lambda n: "Hello." + " " * n + "World. Again"),
)
options = st.sampled_from([{}, {"max_chars": 30}, {"max_chars": 12}, {"max_chars": 1}])


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
        assert all(len(c) <= opts["max_chars"] for c in whole)


def spans(text: str, sentences: list[str]) -> list[tuple[int, int]]:
    """Where each sentence lies in the text: each must be found at or after the end of the previous."""
    out, cursor = [], 0
    for sentence in sentences:
        at = text.find(sentence, cursor)
        assert at >= 0, f"{sentence!r} is not a verbatim slice of the text after offset {cursor}"
        assert not text[cursor:at].strip(), f"text skipped before {sentence!r}"
        cursor = at + len(sentence)
        out.append((at, cursor))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=pathological, opts=options, seed=st.integers(0, 1000))
def test_sentences_are_verbatim_slices_in_order_and_settled_only_grows(
    text: str, opts: dict, seed: int
) -> None:
    """Two segments through one chunker: every sentence is found in the text at or after the previous
    one's end; ``settled`` never decreases, never passes what was fed, and (with no max_chars forced
    cut) no boundary is placed before it afterwards."""
    chunker = IncrementalSentenceChunker(**opts)
    for _ in range(2):  # flush() resets: the second segment behaves as the first
        emitted: list[tuple[int, list[str]]] = []  # (settled before the feed, sentences it returned)
        fed = ""
        for piece in random_pieces(text, seed):
            before = chunker.settled
            fed += piece
            emitted.append((before, chunker.feed(piece)))
            assert before <= chunker.settled <= len(fed)
        emitted.append((chunker.settled, chunker.flush()))
        assert chunker.settled == 0
        sentences = [s for _, batch in emitted for s in batch]
        assert sentences == run([text], **opts)
        ends = iter(end for _, end in spans(text, sentences))
        if "max_chars" in opts:
            continue
        for settled, batch in emitted:
            for _ in batch:  # a boundary decided now lies at or after the settled offset
                end = next(ends)
                assert end >= settled or not text[end:settled].strip()


@settings(max_examples=200, deadline=None)
@given(text=texts, seed=st.integers(0, 1000))
def test_holdback_is_bounded_by_the_window(text: str, seed: int) -> None:
    """A sentence ending at b is out once WINDOW characters past b have been fed, whatever the pieces."""
    chunker = IncrementalSentenceChunker()
    ends = [end for _, end in spans(text, chunker.feed(text))]
    stream = IncrementalSentenceChunker()
    emitted, fed = 0, 0
    for piece in random_pieces(text, seed):
        emitted += len(stream.feed(piece))
        fed += len(piece)
        due = sum(1 for end in ends if end + WINDOW <= fed)
        assert emitted >= due
