"""The onnx engine's static-int8 vocoder: derived from the export, cached with its checksum, chosen at
warm-up, and sounding like the export's own dynamic-int8 vocoder (fused with the AdaSnake operator, as
this machine builds it; unfused when the operator names ``static``).

The engine under test is the shared real one (:mod:`tests.tts_container.real_onnx_engine`): its cache is
the default one, where ``kokoro-weights fetch`` (CI's step before the tests) derived the static vocoder.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from benchmarks.log_mel import log_mel_distance
from benchmarks.speech_check import transcribe, word_error_rate
from benchmarks.torch_converted import HELD_OUT, pcm16
from tests.tts_container.real_onnx_engine import shared_onnx_engine
from tts_container.engines.onnx_engine import (
    DYNAMIC,
    FUSED,
    STATIC,
    VARIANT_ENV,
    OnnxEngine,
    requested_variant,
)
from tts_container.engines.static_int8 import VOCODER_FILE, _read_checked
from tts_container.engines.windows import HARMONICS
from tts_container.synthesis.utterance import plan_utterance

# The export's dynamic int8 vocoder is itself ~1.0 dB (log-mel) from the same weights in float; the
# static one is measured 1.2 dB from the dynamic one on a held-out sentence.
MAX_MEL_DISTANCE_DB = 2.0
MAX_LEVEL_DB = 1.0
MAX_WER = 0.05


def test_a_cached_vocoder_is_read_only_while_its_checksum_holds(tmp_path: Path) -> None:
    path = tmp_path / VOCODER_FILE
    path.write_bytes(b"model bytes")
    assert _read_checked(path) is None  # no recorded checksum: derived again
    path.with_suffix(".sha256").write_text(hashlib.sha256(b"model bytes").hexdigest())
    assert _read_checked(path) == b"model bytes"
    path.write_bytes(b"model bytez")  # damaged on disk
    assert _read_checked(path) is None


def test_the_operator_names_the_variant_or_leaves_it_to_the_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VARIANT_ENV, raising=False)
    assert requested_variant() == "auto"
    monkeypatch.setenv(VARIANT_ENV, " Static ")
    assert requested_variant() == STATIC
    monkeypatch.setenv(VARIANT_ENV, "FUSED")
    assert requested_variant() == FUSED
    monkeypatch.setenv(VARIANT_ENV, "fp8")
    with pytest.raises(ValueError, match=VARIANT_ENV):
        requested_variant()


@pytest.fixture(scope="module")
def engine() -> OnnxEngine:
    return shared_onnx_engine()


@pytest.mark.slow
def test_the_engine_loads_both_variants_and_renders_with_one(engine: OnnxEngine) -> None:
    assert set(engine.variants) == {DYNAMIC, FUSED}  # kept for these tests (``keep_variants``)
    assert engine.variant in engine.variants


@pytest.mark.slow
def test_a_server_s_engine_keeps_only_the_variant_it_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIANT_ENV, STATIC)
    engine = OnnxEngine.from_cache(threads=2)
    assert set(engine.variants) == {DYNAMIC, STATIC}
    assert engine.choose_variant() == STATIC
    assert engine.variants == (STATIC,)
    assert engine.prosody("hˈɛlO", voice="af_heart", speed=1.0).steps > 0  # the shared prosody half stays


@pytest.mark.slow
def test_the_static_vocoder_sounds_like_the_dynamic_one_and_whisper_hears_it(engine: OnnxEngine) -> None:
    zero = np.zeros(HARMONICS, dtype=np.float32)
    chosen, errors, spoken = engine.variant, 0.0, 0
    try:
        for voice, text in HELD_OUT[:4]:  # American voices: read in en-us
            (segment,) = plan_utterance(engine._phonemizer, text, voice=voice, lang="en-us")
            prosody = engine.prosody(segment.phonemes.text, voice=voice, speed=1.0)
            audio = {}
            for variant in (DYNAMIC, FUSED):
                engine.variant = variant
                audio[variant], _ = engine.vocode(prosody, 0, prosody.steps, phase=zero, stats=None)
            distance = log_mel_distance(audio[FUSED], audio[DYNAMIC])
            assert distance.distance_db <= MAX_MEL_DISTANCE_DB, (text, distance)
            assert abs(distance.level_db) <= MAX_LEVEL_DB, (text, distance)
            heard = transcribe(pcm16(audio[FUSED]), 24_000)
            errors += word_error_rate(text, heard) * len(text.split())
            spoken += len(text.split())
    finally:
        engine.variant = chosen
    assert errors / spoken <= MAX_WER
