"""The speech pacer's decisions, over a simulated clock (no sleeps, no sockets, deterministic).

Each test plays turns through :func:`tests.strands_kokoro.pacer_simulation.simulate` (a simulated LLM,
server and listener around the real chunker and pacer). The real server and engine are exercised by
``test_speech_pacing.py`` and by ``benchmarks/e2e_latency.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strands_kokoro.pacing.cut_points import FIRST_PHRASE_MAX_WORDS, MIN_LOOKAHEAD_WORDS
from strands_kokoro.pacing.engine_speed import PRIOR_MS_PER_CHAR, REQUEST_OVERHEAD_MS, EngineSpeed
from strands_kokoro.pacing.pacer import FIRST_SENTENCE_WAIT_MS, MAX_IN_FLIGHT_URGENT, Piece, SpeechPacer
from tests.strands_kokoro.pacer_simulation import ANSWERS, SimRequest, feed_all, llm_tokens, simulate, words

# ------------------------------------------------------------------------- a streaming server


@pytest.mark.parametrize("rtf", [0.02, 0.3, 0.5])
def test_a_streaming_server_gets_whole_sentences_from_the_first_one(rtf: float) -> None:
    for text in ANSWERS:
        turn = simulate(text, rtf=rtf)
        assert [p.text for p in turn.pieces] == turn.sentences, text[:30]
        assert all(p.whole_sentence and p.previous_text is None and p.next_text is None for p in turn.pieces)
        assert turn.stall_ms() == pytest.approx(0.0, abs=1e-6), (rtf, text[:30])


def test_the_first_sentence_is_waited_for_only_as_long_as_a_listener_would_not_notice() -> None:
    """A slow LLM (60 characters a second): the first sentence takes ~1.5 s to write. Past the wait the
    pacer cuts it before a clause opener, leaving three written words after the cut as its context."""
    text = "When a cat feels safe and warm, it purrs quietly to itself for a long time. It helps."
    turn = simulate(text, rtf=0.3, chars_per_s=60.0)
    first = turn.pieces[0]
    assert first.text == "When a cat feels safe"
    assert turn.sent_at[0] - turn.token_times[0] >= FIRST_SENTENCE_WAIT_MS
    assert first.next_text and text.startswith(f"{first.text} {first.next_text}")
    assert len(first.next_text.split()) >= MIN_LOOKAHEAD_WORDS  # what the server renders its end with
    second = turn.pieces[1]
    assert second.previous_text == first.text and second.text.endswith("time.")
    assert words(turn.spoken()) == words(text)
    fast = simulate(text, rtf=0.3)  # the same text written at 350 characters a second: no cut
    assert fast.pieces[0].text == turn.sentences[0]


def test_a_sentence_is_cut_after_the_first_only_when_the_listener_would_wait() -> None:
    """An LLM barely faster than speech, then a stall in its writing: only what the buffer forces."""
    for text in ANSWERS:
        turn = simulate(text, rtf=0.3, chars_per_s=30.0)
        assert turn.stall_ms() <= 1.0, text[:30]
        assert words(turn.spoken()) == words(text)
        for piece in turn.pieces:
            if not piece.whole_sentence:
                assert piece.next_text or piece.previous_text  # every cut carries its context


# ------------------------------------------------------------------- an older, non-streaming server


def test_the_first_piece_from_a_non_streaming_server_is_a_short_natural_phrase() -> None:
    cases = {
        # the first clause, when it ends within 3-5 words
        "Cats purr for many reasons, and scientists still study why.": "Cats purr for many reasons,",
        "Honestly, I think cats purr mostly when they feel safe and content.": "Honestly, I think cats",
        "Cats purr when content; they also purr when they are hurt or afraid.": "Cats purr when content;",
        # else the first four words
        "Domestic cats usually purr while they are being stroked by someone they trust.": (
            "Domestic cats usually purr"
        ),
        # a short first sentence goes whole
        "Sure! Cats purr for many different reasons.": "Sure!",
        "Cats purr when happy. They also purr when hurt.": "Cats purr when happy.",
        "Cats purr for several reasons.": "Cats purr for several reasons.",
        # in text still being written, five words without a clause mark are enough to cut at four
        "Cats purr for several different reasons, some of them unknown.": "Cats purr for several",
    }
    for text, first in cases.items():
        turn = simulate(text, rtf=0.5, streaming=False)
        assert turn.pieces[0].text == first, text
        if not turn.pieces[0].whole_sentence:
            assert turn.pieces[0].next_text  # the words after the cut go along as context


def test_the_first_piece_waits_only_for_five_words_and_their_lookahead() -> None:
    text = "Domestic cats usually purr while they are being stroked by someone they trust."
    turn = simulate(text, rtf=0.5, chars_per_s=20.0, streaming=False)  # a slow LLM: waiting would show
    written = ""
    for when, token in zip(turn.token_times, llm_tokens(text), strict=False):
        written += token
        if when == turn.sent_at[0]:
            break
    # the five words, three of lookahead, and the next one that showed the eighth was whole
    assert len(words(written)) <= FIRST_PHRASE_MAX_WORDS + MIN_LOOKAHEAD_WORDS + 1


@pytest.mark.parametrize("rtf", [0.1, 0.3, 0.5, 0.65, 0.8])
@pytest.mark.parametrize("ms_per_char", [50.0, PRIOR_MS_PER_CHAR, 85.0])
def test_no_gap_when_the_engine_is_faster_than_real_time(rtf: float, ms_per_char: float) -> None:
    for text in ANSWERS:
        turn = simulate(text, rtf=rtf, ms_per_char=ms_per_char, streaming=False)
        assert turn.stall_ms() == pytest.approx(0.0, abs=1e-6), (rtf, ms_per_char, text[:30])
        # and the pacer's own prediction agreed: no piece was planned to arrive after a gap
        assert all(p.predicted_buffer_ms is None or p.predicted_buffer_ms >= 0 for p in turn.pieces)


@pytest.mark.parametrize("rtf", [0.3, 0.65])
def test_no_gap_with_an_llm_that_writes_barely_faster_than_speech(rtf: float) -> None:
    for text in ANSWERS:
        turn = simulate(text, rtf=rtf, chars_per_s=30.0, streaming=False)  # speech is ~15 characters/s
        assert turn.stall_ms() == pytest.approx(0.0, abs=1e-6), (rtf, text[:30])


def test_pieces_grow_back_to_whole_sentences_on_a_cpu() -> None:
    turn = simulate(ANSWERS[3], rtf=0.6, streaming=False)
    sizes = [len(p.text) for p in turn.pieces]
    assert sizes[1] < len(turn.sentences[0]) - len(turn.pieces[0].text)  # the rest of sentence 1 was cut
    assert turn.pieces[-1].whole_sentence and turn.pieces[-2].whole_sentence
    assert turn.pieces[-2].text == turn.sentences[-2]  # whole sentences again by the end


def test_cuts_land_on_clause_marks_when_there_are_any_and_carry_their_context() -> None:
    text = (
        "When a cat feels safe, warm and well fed, it purrs quietly to itself, often for a long time, "
        "and the sound helps it relax. Purring, some scientists think, may also help bones heal, "
        "because its frequency is low, steady and gentle, like a slow massage."
    )
    turn = simulate(text, rtf=0.6, streaming=False)
    cut = [p for p in turn.pieces if not p.whole_sentence]
    assert len(cut) >= 2
    assert all(p.text.endswith((",", ";", ":", "—")) or p.previous_text for p in cut), [p.text for p in cut]
    for before, after in zip(turn.pieces, turn.pieces[1:], strict=False):
        if before.next_text:  # a cut inside a sentence: the next piece continues what it announced
            assert after.text.startswith(before.next_text.split()[0])
            assert after.previous_text is not None and after.previous_text.endswith(before.text)


def test_a_fast_non_streaming_engine_gets_whole_sentences_after_the_first_phrase() -> None:
    for text in ANSWERS:
        turn = simulate(text, rtf=0.02, streaming=False)
        first_rest = turn.sentences[0][len(turn.pieces[0].text) :].strip()
        expected = ([first_rest] if first_rest else []) + turn.sentences[1:]
        assert [p.text for p in turn.pieces[1:]] == expected


def test_a_server_that_streams_is_recognised_once_measured() -> None:
    """No advertisement (an older client path): the first request's first audio came long before it was
    done, so the server streams, and from then on whole sentences go."""
    speed = EngineSpeed()
    assert not speed.streaming
    speed.observe(chars=90, audio_ms=6000, service_ms=2000, first_audio_ms=300)
    assert speed.streaming and speed.first_audio_ms == pytest.approx(300)
    slow = EngineSpeed()
    slow.observe(chars=90, audio_ms=6000, service_ms=2000, first_audio_ms=1990)  # all at the end
    assert not slow.streaming


# --------------------------------------------------------------------------------- properties


VOCABULARY = sorted({w.strip(".,'").lower() for w in " ".join(ANSWERS).split()} - {""})


@settings(max_examples=200, deadline=None)
@given(
    sentences=st.lists(
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=25).map(
            lambda ws: " ".join(ws).capitalize() + "."
        ),
        min_size=1,
        max_size=6,
    ),
    commas=st.booleans(),
    rtf=st.floats(0.02, 0.8),
    streaming=st.booleans(),
    chars_per_s=st.sampled_from([30.0, 350.0]),
)
def test_every_word_is_spoken_once_in_order_and_cuts_carry_their_context(
    sentences: list[str], commas: bool, rtf: float, streaming: bool, chars_per_s: float
) -> None:
    """Any text, any engine: every word once, in order; every piece that is not a whole sentence says
    the words around it, with at least three words of lookahead; a streaming server never has a complete
    sentence cut, nor the first sentence of a fast LLM."""
    text = " ".join(s.replace(" ", ", ", 2) if commas else s for s in sentences)
    turn = simulate(text, rtf=rtf, streaming=streaming, chars_per_s=chars_per_s)
    assert words(turn.spoken()) == words(text)
    for piece in turn.pieces:
        if not piece.whole_sentence:
            assert piece.previous_text or piece.next_text, piece
        if piece.next_text:
            assert text[piece.end :].split()[: len(piece.next_text.split())] == piece.next_text.split()
            # at least three words of lookahead, or all the rest of the sentence
            rest = next(s for s in turn.sentences if s.end > piece.end)
            left = text[piece.end : rest.end].split()
            assert len(piece.next_text.split()) >= min(MIN_LOOKAHEAD_WORDS, len(left)), (piece, left)
        if piece.previous_text:
            assert text[: piece.start].rstrip().endswith(piece.previous_text)
    if streaming and chars_per_s > 100:
        # later ones may be cut where a short sentence ("An.") leaves the listener waiting for a long one
        assert turn.pieces[0].whole_sentence


def test_an_advertised_server_gets_one_request_queued_behind_the_first_at_once() -> None:
    pacer = SpeechPacer()
    pacer.speed.advertised(300.0, 0.3)
    feed_all(pacer, ANSWERS[0])
    first = pacer.next_piece(0.0, [])
    assert first is not None
    second = pacer.next_piece(0.0, [SimRequest(first, 0.0)])
    assert (
        second is not None
        and pacer.next_piece(0.0, [SimRequest(first, 0.0), SimRequest(second, 0.0)]) is None
    )


def test_urgent_hands_over_every_sentence_at_once_below_the_servers_queue_limit() -> None:
    pacer = SpeechPacer()
    feed_all(pacer, " ".join(f"This is sentence number {n} of a long answer." for n in range(40)))
    pieces: list[Piece] = []
    in_flight: list[SimRequest] = []
    while (piece := pacer.next_piece(0.0, in_flight, urgent=True)) is not None:
        pieces.append(piece)
        in_flight.append(SimRequest(piece, 0.0))
    assert len(pieces) == MAX_IN_FLIGHT_URGENT
    assert pacer.next_piece(0.0, in_flight) is None  # in flight is full: the rest waits for completions


def test_pieces_wait_for_the_first_measurement_then_keep_one_queued() -> None:
    """A server that said nothing about its speed: one request at a time until one was measured."""
    pacer = SpeechPacer()
    feed_all(pacer, ANSWERS[0])
    first = pacer.next_piece(0.0, [])
    assert first is not None and pacer.next_piece(0.0, [SimRequest(first, 0.0)]) is None  # one at a time
    audio = 65.0 * len(first.text)
    pacer.audio(audio, 300.0)
    pacer.completed(chars=len(first.text), audio_ms=audio, first_audio_ms=590.0, sent_at=0.0, now=600.0)
    assert pacer.speed.rtf == pytest.approx((600.0 - REQUEST_OVERHEAD_MS) / audio)
    second = pacer.next_piece(600.0, [])
    assert second is not None
    third = pacer.next_piece(600.0, [SimRequest(second, 600.0)])
    assert (
        third is not None
        and pacer.next_piece(600.0, [SimRequest(second, 600.0), SimRequest(third, 600.0)]) is None
    )
    assert second.predicted_buffer_ms is not None and second.predicted_buffer_ms >= 0


def test_engine_speed_moves_towards_slower_readings_faster() -> None:
    speed = EngineSpeed()
    overhead = REQUEST_OVERHEAD_MS
    speed.observe(chars=100, audio_ms=6500, service_ms=3250 + overhead)
    assert speed.rtf == pytest.approx(0.5) and speed.ms_per_char == pytest.approx(65.0)
    speed.observe(chars=100, audio_ms=6500, service_ms=6500 + overhead)  # slower: 1.0
    slower = speed.rtf
    speed.observe(chars=100, audio_ms=6500, service_ms=3250 + overhead)  # back to 0.5
    assert slower is not None and speed.rtf is not None
    assert slower - 0.5 > slower - speed.rtf  # it moved back, but less than it moved up
    speed.observe(chars=0, audio_ms=0, service_ms=10)  # nothing to learn from: ignored
    assert speed.samples == 3


def test_a_long_answer_leaves_no_text_in_the_pacer() -> None:
    text = " ".join(ANSWERS) * 8  # ~20 KB
    pacer = SpeechPacer()
    pacer.speed.advertised(300.0, 0.3)
    feed_all(pacer, text)
    spoken = []
    while (piece := pacer.next_piece(0.0, [])) is not None:
        spoken.append(piece.text)
    assert words(" ".join(spoken)) == words(text)
    assert not pacer.unsent and not pacer._complete  # the pacer keeps offsets, not the text it sent


def test_word_cuts_prefer_ending_before_a_clause_over_ending_on_of_or_the() -> None:
    text = (
        "The sky appears blue because of molecules that absorb and reflect different wavelengths of "
        "light at specific frequencies when they collide with atoms in the atmosphere. When sunlight "
        "reaches our planet's surface, it passes through a mixture of water vapor and other gases."
    )
    weak = {"a", "an", "the", "of", "to", "in", "on", "at", "for", "with", "from", "and", "or", "that"}
    for rtf in (0.3, 0.4, 0.5):
        cut = [p.text for p in simulate(text, rtf=rtf, streaming=False).pieces if not p.whole_sentence]
        assert len(cut) >= 2
        assert not [t for t in cut if words(t)[-1].lower() in weak], (rtf, cut)
