"""How a rendition's spectrum differs from the same sentence rendered whole (used by ``joins``).

Windows normalized with a voice's predicted statistics, not the sentence's own, can tilt its spectrum
(sibilants brighter) without any step a join measure would catch; these compare the long-term spectra.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt

from tts_container.engines.base import NATIVE_SAMPLE_RATE, Audio

OCTAVES_HZ = (125, 250, 500, 1000, 2000, 4000, 8000, 12000)
BRIGHT_HZ = 5000  # above this: the hiss of sibilants and the air of a voice


def _bands_and_bright(audio: Audio) -> tuple[npt.NDArray[np.float64], float]:
    """Each octave band's energy in dB, and the share of the energy above BRIGHT_HZ."""
    power = np.abs(np.fft.rfft(audio.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(audio.size, 1.0 / NATIVE_SAMPLE_RATE)
    bands = [power[(freqs >= lo) & (freqs < hi)].sum() for lo, hi in itertools.pairwise(OCTAVES_HZ)]
    bright = float(power[freqs >= BRIGHT_HZ].sum() / max(power.sum(), 1e-12))
    return 10.0 * np.log10(np.asarray(bands) + 1e-12), bright


def timbre_vs_whole(audio: Audio, whole: Audio) -> tuple[float, float]:
    """How a rendition's spectrum differs from the sentence rendered whole: the mean absolute step of
    its octave bands (level differences taken out), and the step of its share above BRIGHT_HZ, in dB."""
    (bands, bright), (whole_bands, whole_bright) = _bands_and_bright(audio), _bands_and_bright(whole)
    steps = bands - whole_bands
    steps -= float(np.mean(steps))  # the same spectrum louder or softer is a level step, measured apart
    return float(np.mean(np.abs(steps))), 10.0 * math.log10(bright / whole_bright)
