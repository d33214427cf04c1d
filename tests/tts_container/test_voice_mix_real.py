"""A voice mix on the real onnx engine: a voice of its own, streamed in windows like any other.

The mix's vocoder statistics are derived from its voices' (``benchmarks/voice_mix_stats.py`` measured
them as close to the sentence rendered whole as a mix fitted on its own); asking for the mix readies
whichever of its voices has none yet. No timing is asserted: the structure (windows) and the sound.
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt
import pytest

from tests.tts_container.real_onnx_engine import shared_onnx_engine, synthesize
from tts_container.engines.onnx_engine import OnnxEngine

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MIX = "af_heart(0.5)+am_michael(0.5)"
SENTENCE = (
    "The old ferry carried farmers and their goats across the river every morning, long before the "
    "bridge was built."
)


@pytest.fixture(scope="module")
def engine() -> OnnxEngine:
    return shared_onnx_engine()


def spectrum_db(audio: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """The long-term spectrum in 40 bands from 100 Hz to 8 kHz, in dB, level taken out."""
    power = np.abs(np.fft.rfft(audio.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(audio.size, 1 / 24_000)
    edges = np.geomspace(100, 8000, 41)
    bands = np.array([power[(freqs >= lo) & (freqs < hi)].sum() for lo, hi in itertools.pairwise(edges)])
    db = 10 * np.log10(bands / bands.sum() + 1e-15)
    return db - db.mean()


def distance_db(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    return float(np.mean(np.abs(spectrum_db(a) - spectrum_db(b))))


def test_a_mix_readies_its_voices_then_streams_in_windows(engine: OnnxEngine) -> None:
    assert engine.growth is not None  # this CPU renders long segments in windows
    if (calibration := engine.calibration(MIX)) is not None:  # am_michael not fitted in this cache yet
        assert calibration.voice == MIX
        for step in calibration.steps:
            step()
        calibration.finish()
    assert engine.calibration(MIX) is None and engine.calibration("am_michael") is None
    pieces = list(engine.segments(SENTENCE, voice=MIX, speed=1.0, lang="en-us"))
    assert len(pieces) > 2 and not pieces[0].last  # one segment, several windows
    assert [w.text for w in pieces[0].words][:3] == ["The", "old", "ferry"]


def test_a_mix_sounds_unlike_each_of_its_voices_and_between_them(engine: OnnxEngine) -> None:
    heart, michael, mixed = (synthesize(engine, SENTENCE, voice) for voice in ("af_heart", "am_michael", MIX))
    apart = distance_db(heart, michael)
    to_heart, to_michael = distance_db(mixed, heart), distance_db(mixed, michael)
    assert to_heart > 0.5 and to_michael > 0.5, (to_heart, to_michael)
    assert to_heart < apart and to_michael < apart, (to_heart, to_michael, apart)
