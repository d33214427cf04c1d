"""The turn-taking rules over voice-activity frames (pure: probabilities in, signals out)."""

from __future__ import annotations

from strands_kokoro.listening.options import ListeningOptions
from strands_kokoro.listening.playout import Playout
from strands_kokoro.listening.turn_taking import UtteranceCollector

FRAME_MS = 32.0
FRAME = b"\x00\x00" * 512


def run(collector: UtteranceCollector, probability: float, ms: float) -> list[str]:
    kinds: list[str] = []
    for _ in range(round(ms / FRAME_MS)):
        kinds += [s.kind for s in collector.feed(FRAME, probability)]
    return kinds


def test_speech_then_silence_is_one_utterance_ended_by_the_silence() -> None:
    collector = UtteranceCollector(ListeningOptions(), frame_ms=FRAME_MS)
    assert run(collector, 0.0, 640) == []
    assert run(collector, 0.9, 1280) == ["speech", "interruption"]
    signals = []
    for _ in range(round(640 / FRAME_MS)):
        signals += collector.feed(FRAME, 0.0)
    pause, utterance = signals
    assert pause.kind == "pause" and utterance.kind == "utterance"
    assert pause.at_ms - pause.speech_end_ms == 224  # transcribe_after_ms (200), in whole frames
    assert pause.speech_end_ms == utterance.speech_end_ms and utterance.audio.startswith(pause.audio)
    assert utterance.speech_start_ms == 640 and utterance.speech_end_ms == 640 + 1280
    assert utterance.at_ms - utterance.speech_end_ms >= 500  # the end-of-turn silence
    # pre-roll (300 ms: 9 frames) + speech + the silence read before the turn ended
    assert len(utterance.audio) == len(FRAME) * (9 + 40 + 16)


def test_a_200_ms_burst_is_noise_never_an_interruption() -> None:
    collector = UtteranceCollector(ListeningOptions(), frame_ms=FRAME_MS)
    assert run(collector, 0.95, 200) == ["speech"]
    assert run(collector, 0.0, 800) == ["noise"]
    assert not collector.in_utterance


def test_a_pause_shorter_than_the_end_of_turn_keeps_one_utterance() -> None:
    collector = UtteranceCollector(ListeningOptions(end_of_turn_ms=700), frame_ms=FRAME_MS)
    kinds = (
        run(collector, 0.9, 320)
        + run(collector, 0.0, 480)
        + run(collector, 0.9, 320)
        + run(collector, 0.0, 800)
    )
    assert kinds == ["speech", "pause", "interruption", "pause", "utterance"]  # a pause of 480 ms too


def test_a_pause_within_the_turn_is_one_where_the_speech_goes_on() -> None:
    collector = UtteranceCollector(ListeningOptions(end_of_turn_ms=700), frame_ms=FRAME_MS)
    signals = []
    for probability, ms in ((0.9, 320), (0.0, 480), (0.9, 320), (0.0, 800)):
        for _ in range(round(ms / FRAME_MS)):
            signals += collector.feed(FRAME, probability)
    first, second, utterance = [s for s in signals if s.kind in ("pause", "utterance")]
    assert first.speech_end_ms == 320 and second.speech_end_ms == utterance.speech_end_ms == 1120


def test_no_pause_before_the_speech_is_long_enough_nor_when_it_is_turned_off() -> None:
    collector = UtteranceCollector(ListeningOptions(), frame_ms=FRAME_MS)
    assert run(collector, 0.9, 192) + run(collector, 0.0, 800) == ["speech", "noise"]
    late = UtteranceCollector(ListeningOptions(transcribe_after_ms=500), frame_ms=FRAME_MS)
    assert run(late, 0.9, 640) + run(late, 0.0, 800) == ["speech", "interruption", "utterance"]


def test_five_minutes_of_silence_decide_nothing() -> None:
    collector = UtteranceCollector(ListeningOptions(), frame_ms=FRAME_MS)
    assert run(collector, 0.05, 5 * 60_000) == []
    assert not collector.in_utterance


def test_two_minutes_of_talk_without_a_pause_are_cut_into_utterances_at_the_limit() -> None:
    collector = UtteranceCollector(ListeningOptions(), frame_ms=FRAME_MS)
    kinds = run(collector, 0.9, 120_000) + run(collector, 0.0, 800)
    assert kinds.count("too_long") == 4  # at 30, 60, 90 and 120 s
    assert kinds.count("utterance") == 4
    assert kinds[:4] == ["speech", "interruption", "too_long", "utterance"]
    assert "pause" not in kinds  # the last cut came with the last voiced frame


def test_the_hysteresis_holds_the_state_between_the_thresholds() -> None:
    collector = UtteranceCollector(ListeningOptions(), frame_ms=FRAME_MS)
    assert run(collector, 0.9, 320) == ["speech"]
    assert run(collector, 0.4, 320) == ["interruption"]  # 0.35..0.5: still voiced


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_playout_gives_the_words_as_the_listener_hears_them() -> None:
    clock = Clock()
    playout = Playout(clock)
    playout.words(0, [("Hello", 400.0), ("there", 900.0)])
    playout.audio(0, 1000.0)
    playout.completed(0, "Hello there.", filler=False)
    playout.audio(1, 600.0)  # no timings for this one
    assert playout.heard() == ""
    clock.now += 0.5
    assert playout.heard() == "Hello" and round(playout.queued_ms()) == 1100
    clock.now += 0.5
    assert playout.heard() == "there."  # the rest of the sentence, its punctuation kept
    clock.now += 0.3
    assert playout.heard() == ""  # an untimed request counts once it played whole
    playout.completed(1, "Bye.", filler=False)
    clock.now += 0.3
    assert playout.heard() == "Bye." and round(playout.queued_ms()) == 0


def test_a_filler_is_voice_not_answer() -> None:
    clock = Clock()
    playout = Playout(clock)
    playout.audio(0, 500.0)
    playout.completed(0, "One moment.", filler=True)
    playout.audio(1, 500.0)
    playout.completed(1, "Done.", filler=False)
    clock.now += 2
    assert playout.heard() == "Done."
