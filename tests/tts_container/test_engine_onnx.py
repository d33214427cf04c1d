"""The onnx engine on the real int8 Kokoro-82M weights (the ASR round trip is in test_asr.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tts_container.pieces import whole_segments
from tests.tts_container.real_onnx_engine import shared_onnx_engine, synthesize
from tts_container.engines.base import NATIVE_SAMPLE_RATE, Engine
from tts_container.engines.loader import cuda_available, load_engine, resolve_engine_name
from tts_container.engines.onnx_engine import OnnxEngine
from tts_container.engines.voices import UnknownVoice
from tts_container.text.g2p import UnsupportedLanguage
from tts_container.weights.sources import KOKORO_V1_VOICES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engine() -> OnnxEngine:
    return shared_onnx_engine()


def rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(audio, dtype=np.float64))))


def test_engine_satisfies_the_protocol_and_has_every_voice(engine: OnnxEngine) -> None:
    protocol_view: Engine = engine
    assert protocol_view.name == "onnx"
    assert engine.voices == frozenset(KOKORO_V1_VOICES)
    assert {"af_heart", "af_bella", "am_michael", "bf_emma", "bm_george"} <= engine.voices


def test_hello_there_is_a_short_loud_enough_float32_utterance(engine: OnnxEngine) -> None:
    segments = whole_segments(engine.segments("Hello there.", voice="af_heart", speed=1.0, lang="en-us"))
    assert len(segments) == 1
    audio = segments[0].audio
    assert audio.dtype == np.float32
    assert audio.ndim == 1
    assert 0.6 < audio.size / NATIVE_SAMPLE_RATE < 3.0
    assert np.isfinite(audio).all()
    assert rms(audio) > 0.02 and np.abs(audio).max() < 1.5


def test_each_sentence_is_its_own_segment(engine: OnnxEngine) -> None:
    text = "The first sentence is here. The second one follows! Is there a third?"
    segments = whole_segments(engine.segments(text, voice="am_michael", speed=1.0, lang="en-us"))
    assert len(segments) == 3
    assert all(rms(segment.audio) > 0.02 for segment in segments)


def test_over_long_sentence_streams_in_segments_the_model_accepts(engine: OnnxEngine) -> None:
    """A single sentence past 510 phonemes is cut at clauses; the first segment comes before the rest.

    Only the first segment is synthesized (the generator is closed after it): how the phonemes are cut
    is covered in test_g2p.py, and synthesizing all of it would only make the test slower.
    """
    text = "This clause keeps going, and it goes on and on, without a full stop, " * 8 + "until now."
    iterator = engine.segments(text, voice="af_heart", speed=1.2, lang="en-us")
    first = next(iterator).audio
    iterator.close()
    assert 0 < first.size / NATIVE_SAMPLE_RATE < 60
    assert rms(first) > 0.02


def test_speed_changes_duration(engine: OnnxEngine) -> None:
    text = "Speed should change how long this sentence takes."
    slow = synthesize(engine, text, speed=0.8).size
    fast = synthesize(engine, text, speed=1.6).size
    assert fast < 0.75 * slow


def test_british_voice_and_other_languages_speak(engine: OnnxEngine) -> None:
    assert rms(synthesize(engine, "Good afternoon, everyone.", voice="bf_emma")) > 0.02
    french = list(engine.segments("Bonjour tout le monde.", voice="ff_siwis", speed=1.0, lang="fr"))
    assert french and rms(np.concatenate([segment.audio for segment in french])) > 0.02


def test_bad_requests_raise_typed_errors(engine: OnnxEngine) -> None:
    with pytest.raises(UnknownVoice):
        list(engine.segments("Hi.", voice="xx_nobody", speed=1.0, lang="en-us"))
    with pytest.raises(UnsupportedLanguage):
        list(engine.segments("Hi.", voice="af_heart", speed=1.0, lang="ko"))


def test_nothing_speakable_yields_no_segment(engine: OnnxEngine) -> None:
    assert list(engine.segments("   ", voice="af_heart", speed=1.0, lang="en-us")) == []


def test_loader_resolves_names() -> None:
    assert resolve_engine_name("onnx") == "onnx"
    assert resolve_engine_name("torch") == "torch"
    assert resolve_engine_name("auto") == ("torch" if cuda_available() else "onnx")
    with pytest.raises(ValueError, match="onnx, torch, auto"):
        resolve_engine_name("tensorflow")


def test_load_engine_onnx_from_the_default_cache() -> None:
    loaded = load_engine("onnx", threads=1)
    assert isinstance(loaded, OnnxEngine)
    assert "af_heart" in loaded.voices


def test_word_timings_match_the_onsets_of_s_sounds(engine: OnnxEngine) -> None:
    """An acoustic reference for word timings, independent of any model: the hiss of an /s/ starts
    a word audibly (high-frequency energy rises). Our starts come from the model's durations.

    Heard in the model's own rendering (one call per segment): the windows of a voice with fitted
    statistics render its sibilants brighter (benchmarks/joins.py measures how much), which moves a
    threshold set from the loudest hiss, so the reference would depend on which voices this machine's
    cache has fitted."""
    differences: list[float] = []
    growth, engine.growth = engine.growth, None
    try:
        renditions = [
            whole_segments(engine.segments(text, voice=voice, speed=1.0, lang="en-us"))
            for voice in ("af_heart", "am_michael", "bf_emma")
            for text in ("We saw six small ships sailing south.", "They sell soup and salad every Saturday.")
        ]
    finally:
        engine.growth = growth
    for segment in (segment for rendition in renditions for segment in rendition):
        hiss = np.diff(segment.audio, prepend=np.float32(0.0))
        step = NATIVE_SAMPLE_RATE // 200  # 5 ms
        envelope = np.sqrt(np.mean(hiss[: hiss.size // step * step].reshape(-1, step) ** 2, axis=1))
        threshold = 0.25 * float(envelope.max())
        rises = np.flatnonzero((envelope[1:] >= threshold) & (envelope[:-1] < threshold)) + 1
        for word in segment.words:
            if word.text.lower().startswith("s") and not word.text.lower().startswith("sh"):
                nearest = rises[np.argmin(np.abs(rises * 5.0 - word.start_ms))] * 5.0
                if abs(nearest - word.start_ms) <= 200:
                    differences.append(word.start_ms - nearest)
    assert len(differences) >= 20
    assert abs(float(np.mean(differences))) <= 40.0, differences  # no bias
    assert float(np.mean(np.abs(differences))) <= 80.0, differences
