"""The log-mel distance between two renditions: level apart, timing aligned, zero for the same sound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.log_mel import log_mel_distance
from tts_container.engines.base import NATIVE_SAMPLE_RATE


def vowel(seconds: float, pitch_hz: float = 140.0) -> np.ndarray:
    """A buzz with a few harmonics under a slow envelope, with silence either side."""
    t = np.arange(int(seconds * NATIVE_SAMPLE_RATE)) / NATIVE_SAMPLE_RATE
    tone = sum(np.sin(2 * math.pi * pitch_hz * k * t) / k for k in range(1, 8))
    sound = (0.1 * np.sin(math.pi * t / seconds) * tone).astype(np.float32)
    gap = np.zeros(NATIVE_SAMPLE_RATE // 5, dtype=np.float32)
    return np.concatenate([gap, sound, gap])


def test_the_same_sound_quieter_is_at_no_distance_and_its_level_is_reported() -> None:
    sound = vowel(1.0)
    same = log_mel_distance(sound, sound)
    assert same.distance_db < 1e-9 and abs(same.level_db) < 1e-9
    quieter = log_mel_distance(sound / 1.5, sound)
    assert quieter.distance_db < 1e-6
    assert quieter.level_db == pytest.approx(-20 * math.log10(1.5), abs=1e-6)


def test_a_rendition_a_little_longer_is_aligned_not_compared_frame_by_frame() -> None:
    reference = vowel(1.0)
    slower = vowel(1.05)
    assert log_mel_distance(slower, reference).distance_db < 1.0


def test_another_sound_is_far() -> None:
    assert log_mel_distance(vowel(1.0, pitch_hz=300.0), vowel(1.0)).distance_db > 5.0
