"""How far apart two renditions of the same sentence sound: log-mel distance, time-aligned, level apart.

For renditions whose timing may differ by a few frames (two engines, or two sets of weights, whose
durations round differently now and then): both are turned into log-mel spectra (80 bands to 12 kHz,
10 ms hops), aligned by dynamic time warping, and compared band by band over the frames where the
reference speaks (within 50 dB of its loudest frame), with every band floored 80 dB under the
reference's loudest (digital silence and window leakage compare as equal). The overall level difference
is reported apart and taken out of the distance first, so a rendition the same but quieter reads 0 dB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tts_container.engines.base import NATIVE_SAMPLE_RATE, Audio

Matrix = npt.NDArray[np.float64]

FFT_SIZE = 1024
HOP = NATIVE_SAMPLE_RATE // 100  # 10 ms
BANDS = 80
TOP_HZ = 12_000.0
SPEECH_RANGE_DB = 50.0  # frames of the reference within this of its loudest frame count as speech
FLOOR_RANGE_DB = 80.0  # band values further below the reference's loudest compare as equal


@dataclass(frozen=True)
class MelDistance:
    """``distance_db``: mean absolute log-mel difference over aligned speech frames, level taken out;
    ``level_db``: how much louder the rendition is than the reference (negative: quieter)."""

    distance_db: float
    level_db: float


def log_mel_db(audio: Audio, rate: int = NATIVE_SAMPLE_RATE) -> Matrix:
    """``(frames, BANDS)`` log-mel power in dB (Hann window, HTK mel scale)."""
    signal = np.asarray(audio, dtype=np.float64)
    if signal.size < FFT_SIZE:
        signal = np.pad(signal, (0, FFT_SIZE - signal.size))
    frames = 1 + (signal.size - FFT_SIZE) // HOP
    index = np.arange(FFT_SIZE)[None, :] + HOP * np.arange(frames)[:, None]
    power = np.abs(np.fft.rfft(signal[index] * np.hanning(FFT_SIZE), axis=1)) ** 2
    return 10.0 * np.log10(power @ _mel_filters(rate).T + 1e-12)


def log_mel_distance(rendition: Audio, reference: Audio) -> MelDistance:
    """How far ``rendition`` sounds from ``reference`` (see the module docstring)."""
    ours, theirs = log_mel_db(rendition), log_mel_db(reference)
    power = float(np.mean(np.square(rendition, dtype=np.float64)))
    reference_power = float(np.mean(np.square(reference, dtype=np.float64)))
    level = 10.0 * float(np.log10(power / reference_power))
    floor = float(theirs.max()) - FLOOR_RANGE_DB
    ours, theirs = np.maximum(ours - level, floor), np.maximum(theirs, floor)
    pairs = _aligned(ours, theirs)
    loudness = theirs.max(axis=1)
    speech = [(i, j) for i, j in pairs if loudness[j] >= loudness.max() - SPEECH_RANGE_DB]
    rows, columns = (np.array(axis) for axis in zip(*speech, strict=True))
    return MelDistance(float(np.mean(np.abs(ours[rows] - theirs[columns]))), level)


def _aligned(a: Matrix, b: Matrix) -> list[tuple[int, int]]:
    """The dynamic-time-warping path between the frames of ``a`` and ``b`` (mean absolute band step)."""
    cost = np.mean(np.abs(a[:, None, :] - b[None, :, :]), axis=2)
    total = np.full((a.shape[0] + 1, b.shape[0] + 1), np.inf)
    total[0, 0] = 0.0
    for i in range(1, a.shape[0] + 1):
        for j in range(1, b.shape[0] + 1):
            total[i, j] = cost[i - 1, j - 1] + min(total[i - 1, j], total[i - 1, j - 1], total[i, j - 1])
    path, i, j = [], a.shape[0], b.shape[0]
    while i > 0 and j > 0:
        path.append((i - 1, j - 1))
        step = int(np.argmin([total[i - 1, j - 1], total[i - 1, j], total[i, j - 1]]))
        i, j = (i - 1, j - 1) if step == 0 else (i - 1, j) if step == 1 else (i, j - 1)
    return path[::-1]


def _mel_filters(rate: int) -> Matrix:
    """Triangular filters on the HTK mel scale, ``(BANDS, FFT_SIZE // 2 + 1)``."""
    mel = np.linspace(_mel(0.0), _mel(min(TOP_HZ, rate / 2)), BANDS + 2)
    edges = 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    freqs = np.fft.rfftfreq(FFT_SIZE, 1.0 / rate)
    low, centre, high = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (freqs[None, :] - low) / (centre - low)
    falling = (high - freqs[None, :]) / (high - centre)
    return np.maximum(0.0, np.minimum(rising, falling))


def _mel(hz: float) -> float:
    return float(2595.0 * np.log10(1.0 + hz / 700.0))
