"""Normalized speech, checked by Whisper: what the server says for the written text must be heard as
what it says for the words a person would read (``normalization_cases.WHISPER_SUBSET``).

Both audios come from the REAL model server (onnx engine) over ``POST /invocations``, as in
``test_asr.py``. Three checks: the two transcripts agree (the written text is read as the expected
words); Whisper's transcript of the written text, normalized again, says the expected words (the audio
is intelligible as meant, not only alike); and the word timings name the written words ("km/h"), each
once, in order.
"""

from __future__ import annotations

import pytest

from benchmarks.speech_check import edit_distance, transcribe, words
from tests.model_server_process import RunningServer
from tests.tts_container.normalization_cases import CASES, WHISPER_SUBSET
from tests.tts_container.test_asr import SAMPLE_RATE, Heard, received
from tts_container.text.normalization.normalizer import normalize, spoken_words

pytestmark = pytest.mark.slow

MAX_TRANSCRIPT_WER = 0.05  # the same sounds: only Whisper's own noise may differ
MAX_MEANT_WER = 0.1  # Whisper writes "3.45pm" for "three forty five P M": 0.017 measured

EXPECTED = {written: spoken for _, written, spoken in CASES}


@pytest.fixture(scope="module")
def pairs(model_server: RunningServer) -> list[tuple[str, Heard, Heard]]:
    """(written, the server's audio of it, its audio of the expected words), each transcribed."""
    out = []
    for written in WHISPER_SUBSET:
        heard_written = received(model_server, "af_heart", written)
        heard_expected = received(model_server, "af_heart", EXPECTED[written])
        heard_written.transcript = transcribe(heard_written.pcm, SAMPLE_RATE)
        heard_expected.transcript = transcribe(heard_expected.pcm, SAMPLE_RATE)
        out.append((written, heard_written, heard_expected))
    return out


@pytest.mark.timeout(900)
def test_written_and_expected_words_are_heard_alike(pairs: list[tuple[str, Heard, Heard]]) -> None:
    errors = total = meant_errors = meant_total = 0
    report = []
    for written, as_written, as_expected in pairs:
        alike = edit_distance(words(as_expected.transcript), words(as_written.transcript))
        errors += alike
        total += len(words(as_expected.transcript))
        meant = edit_distance(words(EXPECTED[written]), words(normalize(as_written.transcript)))
        meant_errors += meant
        meant_total += len(words(EXPECTED[written]))
        heard = f"{as_written.transcript.strip()} | {as_expected.transcript.strip()}"
        report.append(f"{alike} {meant} | {written} | {heard}")
    print(
        f"\nnormalized speech: transcripts WER {errors / total:.3f}, meant {meant_errors / meant_total:.3f}"
    )
    print("\n".join(report))
    assert errors / total <= MAX_TRANSCRIPT_WER, "\n".join(report)
    assert meant_errors / meant_total <= MAX_MEANT_WER, "\n".join(report)


@pytest.mark.timeout(900)
def test_word_timings_name_the_written_words(pairs: list[tuple[str, Heard, Heard]]) -> None:
    for written, as_written, _ in pairs:
        captions = [w.text for w in as_written.words]
        assert captions == [r.written for r in spoken_words(written)], (written, captions)
        assert all(
            a.start_ms <= b.start_ms for a, b in zip(as_written.words, as_written.words[1:], strict=False)
        )
