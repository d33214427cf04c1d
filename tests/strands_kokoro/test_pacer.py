"""The speech pacer's decisions, over a simulated clock (no sleeps, no sockets, deterministic).

:func:`simulate` plays one turn: an LLM writes text at a set rate (token by token, through the real
``IncrementalSentenceChunker``), the pacer decides the requests, a simulated engine synthesizes them
one after another at a set real-time factor, and an independent real-time player (not the pacer's own
bookkeeping) measures the stall a listener would hear. The real server and engine are exercised by
``test_speech_pacing.py`` and by ``benchmarks/e2e_latency.py``.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strands_kokoro.chunker import IncrementalSentenceChunker
from strands_kokoro.engine_speed import PRIOR_MS_PER_CHAR, REQUEST_OVERHEAD_MS, EngineSpeed
from strands_kokoro.pacer import MAX_IN_FLIGHT_URGENT, MIN_WORDS, Piece, SpeechPacer

# Answers like the benchmark's prompts get from a small LLM (3-5 sentences, clauses of varied length).
ANSWERS = (
    "The sky looks blue because sunlight is scattered by the air. Blue light has a shorter wavelength, "
    "so it bounces around much more than red light does. When you look up, that scattered blue light "
    "reaches your eyes from every direction. At sunset the light travels through more air, and the "
    "sky turns orange and red.",
    "A good morning starts with a glass of water and some stretching. Then take a few minutes to plan "
    "the day ahead. Eat a breakfast with protein and fruit. Finally, step outside for some fresh air "
    "before you start working.",
    "A volcano is an opening in the Earth's crust where molten rock escapes. When pressure builds up "
    "underground, magma rises through cracks and erupts as lava, ash and gas. Over many eruptions the "
    "layers pile up into the mountains we recognise as volcanoes.",
    "Bees collect nectar from flowers with their long tongues. They store it in a special honey "
    "stomach and carry it back to the hive. There, worker bees pass the nectar from mouth to mouth, "
    "adding enzymes that break down the sugars. They spread it into wax cells and fan it with their "
    "wings until most of the water evaporates. Finally they seal each cell with wax to keep the honey.",
    "A moving bicycle stays upright mostly because of how its front wheel steers. When the bike leans, "
    "the front wheel turns into the lean and brings the wheels back under the rider. The rider also "
    "makes small steering corrections without thinking about them. Speed helps too, because these "
    "corrections work better when the wheels are rolling.",
)
_TOKEN = re.compile(r"\S{1,5}\s*|\s+")


def llm_tokens(text: str) -> list[str]:
    """Pieces of up to five characters with their trailing space: about an LLM's token size."""
    return _TOKEN.findall(text)


def words(text: str) -> list[str]:
    return text.split()


@dataclass
class SimTurn:
    pieces: list[Piece] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    arrivals: list[tuple[float, float]] = field(default_factory=list)  # (when the listener got it, ms)
    token_times: list[float] = field(default_factory=list)

    @property
    def first_audio_ms(self) -> float:
        return self.arrivals[0][0]

    def stall_ms(self) -> float:
        """A real-time player that starts with the first audio; every moment with nothing to play."""
        play_end: float | None = None
        stalled = 0.0
        for arrival, duration in self.arrivals:
            play_end = arrival if play_end is None else play_end
            stalled += max(0.0, arrival - play_end)
            play_end = max(play_end, arrival) + duration
        return stalled

    def spoken(self) -> str:
        return " ".join(piece.text for piece in self.pieces)


def simulate(
    text: str,
    *,
    rtf: float,
    ms_per_char: float = PRIOR_MS_PER_CHAR,
    chars_per_s: float = 350.0,
    first_token_ms: float = 200.0,
    overhead_ms: float = 30.0,
    policy: str = "latency",
) -> SimTurn:
    """One turn on a simulated clock; the engine's audio per character and speed are exact."""
    pacer = SpeechPacer(policy=policy)  # type: ignore[arg-type]
    chunker = IncrementalSentenceChunker(max_chars=350)
    turn = SimTurn()
    queue: list[tuple[float, int, str, object]] = []
    order = 0

    def at(when: float, kind: str, payload: object = None) -> None:
        nonlocal order
        heapq.heappush(queue, (when, order, kind, payload))
        order += 1

    t = first_token_ms
    for token in llm_tokens(text):
        at(t, "token", token)
        t += 1000.0 * len(token) / chars_per_s
    at(t, "end")
    server_free = 0.0
    playing = policy == "latency"
    held: list[float] = []

    def send_ready(now: float) -> None:
        nonlocal server_free
        while (piece := pacer.next_piece(now)) is not None:
            pacer.sent(piece.id, now)
            turn.pieces.append(piece)
            turn.sent_at.append(now)
            audio = ms_per_char * len(piece.text)
            server_free = max(now, server_free) + overhead_ms + rtf * audio
            at(server_free, "done", (piece.id, audio))

    while queue:
        now, _, kind, payload = heapq.heappop(queue)
        if kind == "token":
            assert isinstance(payload, str)
            turn.token_times.append(now)
            sentences = chunker.feed(payload)
            turn.sentences += sentences
            pacer.write(payload, sentences, chunker.settled)
        elif kind == "end":
            sentences = chunker.flush()
            turn.sentences += sentences
            pacer.write("", sentences, None)
            pacer.end_segment()
        else:
            piece_id, audio = payload  # type: ignore[misc]
            pacer.audio(piece_id, audio, now, playing=playing)
            pacer.completed(piece_id, audio, now)
            if playing:
                turn.arrivals.append((now, audio))
            else:
                held.append(audio)
        send_ready(now)
        if not playing and held and (not queue or pacer.may_start_playback(sum(held), now)):
            playing = True
            pacer.start_playback(sum(held), now)
            turn.arrivals += [(now, audio) for audio in held]
    assert not pacer.unsent and pacer.in_flight == 0
    return turn


def test_the_first_piece_is_a_short_natural_phrase() -> None:
    cases = {
        # the first clause, when it ends within 3-5 words
        "Cats purr for many reasons, and scientists still study why.": "Cats purr for many reasons,",
        "Honestly, I think cats purr mostly when they feel safe and content.": "Honestly, I think cats",
        "Cats purr when content; they also purr when they are hurt or afraid.": "Cats purr when content;",
        # else the first four words
        "Domestic cats usually purr while they are being stroked by someone they trust.": (
            "Domestic cats usually purr"
        ),
        # a sentence of one or two words takes the words after it along
        "Sure! Cats purr for many different reasons.": "Sure! Cats purr",  # not "... for"
        "Good question. Cats purr when they are happy.": "Good question. Cats purr",
        # a sentence too short to cut twice goes whole
        "Cats purr when happy. They also purr when hurt.": "Cats purr when happy.",
        "Cats purr for several reasons.": "Cats purr for several reasons.",
        # in text still being written, five words without a clause mark are enough to cut at four
        "Cats purr for several different reasons.": "Cats purr for several",
    }
    for text, first in cases.items():
        turn = simulate(text, rtf=0.5)
        assert turn.pieces[0].text == first, text
        assert 1 <= len(words(first)) <= 6


def test_the_first_piece_never_waits_for_more_than_five_words() -> None:
    text = "Domestic cats usually purr while they are being stroked by someone they trust."
    turn = simulate(text, rtf=0.5, chars_per_s=20.0)  # a slow LLM: waiting would show
    written = ""
    for when, token in zip(turn.token_times, llm_tokens(text), strict=False):
        written += token
        if when == turn.sent_at[0]:
            break
    assert len(words(written)) <= 6  # the fifth word, and the start of the sixth that ended it


@pytest.mark.parametrize("rtf", [0.1, 0.3, 0.5, 0.65, 0.8])
@pytest.mark.parametrize("ms_per_char", [50.0, PRIOR_MS_PER_CHAR, 85.0])
def test_no_gap_when_the_engine_is_faster_than_real_time(rtf: float, ms_per_char: float) -> None:
    for text in ANSWERS:
        turn = simulate(text, rtf=rtf, ms_per_char=ms_per_char)
        assert turn.stall_ms() == pytest.approx(0.0, abs=1e-6), (rtf, ms_per_char, text[:30])
        # and the pacer's own prediction agreed: no piece was planned to arrive after a gap
        assert all(p.predicted_buffer_ms is None or p.predicted_buffer_ms >= 0 for p in turn.pieces)


@pytest.mark.parametrize("rtf", [0.3, 0.65])
def test_no_gap_with_an_llm_that_writes_barely_faster_than_speech(rtf: float) -> None:
    for text in ANSWERS:
        turn = simulate(text, rtf=rtf, chars_per_s=30.0)  # speech is ~15 characters a second
        assert turn.stall_ms() == pytest.approx(0.0, abs=1e-6), (rtf, text[:30])


def test_pieces_grow_back_to_whole_sentences_on_a_cpu() -> None:
    turn = simulate(ANSWERS[3], rtf=0.6)
    sizes = [len(p.text) for p in turn.pieces]
    assert sizes[1] < len(turn.sentences[0]) - len(turn.pieces[0].text)  # the rest of sentence 1 was cut
    assert turn.pieces[-1].whole_sentence and turn.pieces[-2].whole_sentence
    assert turn.pieces[-2].text == turn.sentences[-2]  # whole sentences again by the end
    assert all(len(words(p.text)) >= 3 or p.whole_sentence for p in turn.pieces)


def test_cuts_land_on_clause_marks_when_there_are_any() -> None:
    text = (
        "When a cat feels safe, warm and well fed, it purrs quietly to itself, often for a long time, "
        "and the sound helps it relax. Purring, some scientists think, may also help bones heal, "
        "because its frequency is low, steady and gentle, like a slow massage."
    )
    turn = simulate(text, rtf=0.6)
    cut = [p for p in turn.pieces if not p.whole_sentence]
    assert len(cut) >= 2
    assert all(p.text.endswith((",", ";", ":", "—")) for p in cut), [p.text for p in cut]


@pytest.mark.parametrize("chars_per_s", [350.0, 40.0])
def test_a_fast_engine_gets_whole_sentences_after_the_first_phrase(chars_per_s: float) -> None:
    for text in ANSWERS:
        turn = simulate(text, rtf=0.02, chars_per_s=chars_per_s)
        first_rest = turn.sentences[0][len(turn.pieces[0].text) :].strip()
        expected = ([first_rest] if first_rest else []) + turn.sentences[1:]
        assert [p.text for p in turn.pieces[1:]] == expected


def test_smooth_holds_the_start_until_a_slow_engine_cannot_run_dry() -> None:
    for text in ANSWERS:
        smooth = simulate(text, rtf=1.3, policy="smooth")
        assert smooth.stall_ms() == pytest.approx(0.0, abs=1e-6)
        latency = simulate(text, rtf=1.3, policy="latency")
        assert latency.stall_ms() > 0  # the measure can fail: without holding back, it gaps
        assert latency.first_audio_ms < smooth.first_audio_ms


def test_smooth_on_a_fast_engine_starts_as_soon_as_the_first_phrase_arrives() -> None:
    turn = simulate(ANSWERS[0], rtf=0.02, policy="smooth")
    assert turn.arrivals[0][0] == pytest.approx(turn.sent_at[0] + 30.0 + 0.02 * 65 * len(turn.pieces[0].text))
    assert turn.stall_ms() == 0.0


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
)
def test_every_word_is_spoken_once_in_order_and_gaps_only_where_words_cannot_be_split(
    sentences: list[str], commas: bool, rtf: float
) -> None:
    """Any text: every word once, in order. A gap comes only before a piece too short to be cut into
    two of MIN_WORDS (a run of one-letter words before a long one can force that), never from a piece
    the budget could have split."""
    text = " ".join(s.replace(" ", ", ", 2) if commas else s for s in sentences)
    turn = simulate(text, rtf=rtf)
    assert words(turn.spoken()) == words(text)
    play_end: float | None = None
    for piece, (arrival, duration) in zip(turn.pieces, turn.arrivals, strict=True):
        if play_end is not None and arrival > play_end + 1e-6:
            assert len(words(piece.text)) < 2 * MIN_WORDS, (piece.text, arrival - play_end)
        play_end = arrival + duration if play_end is None else max(play_end, arrival) + duration


def test_urgent_hands_over_every_sentence_at_once_below_the_servers_queue_limit() -> None:
    pacer = SpeechPacer()
    text = " ".join(f"This is sentence number {n} of a long answer." for n in range(40))
    chunker = IncrementalSentenceChunker()
    pacer.write(text, chunker.feed(text), chunker.settled)
    pacer.write("", chunker.flush(), None)
    pacer.end_segment()
    pieces = []
    while (piece := pacer.next_piece(0.0, urgent=True)) is not None:
        pieces.append(piece)
    assert len(pieces) == MAX_IN_FLIGHT_URGENT
    assert pacer.next_piece(0.0) is None  # in flight is full: the rest waits for completions


def test_pieces_wait_for_the_first_measurement_then_keep_one_queued() -> None:
    pacer = SpeechPacer()
    text = ANSWERS[0]
    chunker = IncrementalSentenceChunker()
    pacer.write(text, chunker.feed(text), chunker.settled)
    first = pacer.next_piece(0.0)
    assert first is not None and pacer.next_piece(0.0) is None  # speed unknown: one at a time
    pacer.sent(first.id, 0.0)
    audio = 65.0 * len(first.text)
    pacer.audio(first.id, audio, 600.0)
    pacer.completed(first.id, audio, 600.0)
    assert pacer.speed.rtf == pytest.approx((600.0 - REQUEST_OVERHEAD_MS) / audio)
    second, third = pacer.next_piece(600.0), pacer.next_piece(600.0)
    assert second is not None and third is not None and pacer.next_piece(600.0) is None
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


def test_a_long_answer_keeps_the_pacers_text_bounded() -> None:
    text = " ".join(ANSWERS) * 8  # ~20 KB
    turn = simulate(text, rtf=0.3)
    assert words(turn.spoken()) == words(text)


def test_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="policy"):
        SpeechPacer(policy="fast")  # type: ignore[arg-type]


def test_word_cuts_prefer_ending_before_a_clause_over_ending_on_of_or_the() -> None:
    text = (
        "The sky appears blue because of molecules that absorb and reflect different wavelengths of "
        "light at specific frequencies when they collide with atoms in the atmosphere. When sunlight "
        "reaches our planet's surface, it passes through a mixture of water vapor and other gases."
    )
    weak = {"a", "an", "the", "of", "to", "in", "on", "at", "for", "with", "from", "and", "or", "that"}
    for rtf in (0.3, 0.4, 0.5):
        cut = [p.text for p in simulate(text, rtf=rtf).pieces if not p.whole_sentence]
        assert len(cut) >= 2
        assert not [t for t in cut if words(t)[-1].lower() in weak], (rtf, cut)
