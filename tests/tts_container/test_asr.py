"""Real speech, checked by ear of a machine: onnx-engine audio transcribed by Whisper-base must match.

Whisper-base comes from :mod:`benchmarks.speech_check` (the same ear the benchmarks use).
"""

from __future__ import annotations

import numpy as np
import pytest
import soxr

from benchmarks.speech_check import WHISPER_SAMPLE_RATE, edit_distance, whisper, words
from tests.tts_container.real_onnx_engine import shared_onnx_engine, synthesize
from tts_container.engines.base import NATIVE_SAMPLE_RATE

pytestmark = pytest.mark.slow

MAX_WER = 0.1

# (voice, sentence): no digits (their spelling is ambiguous), both accents, male and female voices.
SENTENCES = [
    ("af_heart", "The quick brown fox jumps over the lazy dog."),
    ("af_heart", "Please remember to bring an umbrella tomorrow morning."),
    ("am_michael", "She sells fresh vegetables at the market every weekend."),
    ("am_michael", "Our train leaves the station in the early afternoon."),
    ("bf_emma", "Reading a good book is a wonderful way to relax."),
    ("bf_emma", "The weather today is sunny with a gentle breeze."),
    ("bm_george", "Could you turn off the lights before you leave?"),
    ("bm_george", "He cooked a delicious dinner for all of his friends."),
    ("af_bella", "Music helps many people focus while they work."),
    ("af_heart", "The children played happily in the garden all day."),
]


def test_edit_distance_counts_each_kind_of_error() -> None:
    assert edit_distance(words("a b c"), words("a b c")) == 0
    assert edit_distance(words("a b c"), words("a x c")) == 1
    assert edit_distance(words("a b c"), words("a c")) == 1
    assert edit_distance(words("a b c"), words("a b c d")) == 1
    assert words("Hello, World! It's me.") == ["hello", "world", "it's", "me"]


@pytest.mark.timeout(900)  # two real models on a shared 2-core machine; the suite default is 300 s
def test_onnx_speech_round_trips_through_whisper() -> None:
    engine = shared_onnx_engine()
    asr = whisper()
    errors = total = 0
    report = []
    for voice, sentence in SENTENCES:
        audio = soxr.resample(
            synthesize(engine, sentence, voice=voice), NATIVE_SAMPLE_RATE, WHISPER_SAMPLE_RATE
        )
        segments, _ = asr.transcribe(audio.astype(np.float32), language="en", beam_size=5, vad_filter=False)
        heard = " ".join(segment.text for segment in segments)
        distance = edit_distance(words(sentence), words(heard))
        errors += distance
        total += len(words(sentence))
        report.append(f"{voice:10s} {distance} | {sentence} | {heard.strip()}")
    wer = errors / total
    print(f"\nASR round trip: WER {wer:.3f} over {len(SENTENCES)} sentences ({total} words)")
    print("\n".join(report))
    assert wer <= MAX_WER, "\n".join(report)
