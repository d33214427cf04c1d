"""Test doubles for the server's unit tests. The real engine is tested in test_server_real*.py.

``ToneEngine`` stands in for Kokoro: one sine tone per sentence (a frequency per voice, so audio of one
session cannot pass for another's), padded with silence like Kokoro's output, optionally slow.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from tts_container.engines.base import NATIVE_SAMPLE_RATE, Audio
from tts_container.synthesis.stitching import KEEP_LEAD_S, KEEP_TAIL_S

TONE_HZ = {"af_heart": 220.0, "am_michael": 330.0, "bf_emma": 440.0}
LEAD_SILENCE_S = 0.1
TAIL_SILENCE_S = 0.4
SECONDS_PER_WORD = 0.1


@dataclass
class ToneEngine:
    """A fake engine: ``delay_s`` of blocking work per segment; text containing FAIL raises."""

    delay_s: float = 0.0
    name: str = "tone"
    lanes: int = 1
    variant = "test double"
    calls: list[tuple[str, float]] = field(default_factory=list)  # (segment text, time it started)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def voices(self) -> frozenset[str]:
        return frozenset(TONE_HZ)

    @property
    def renders_in_windows(self) -> bool:
        """This double renders each sentence in one call."""
        return False

    def calibration(self, voice: str) -> None:
        """Nothing to fit: this double renders every segment at once."""
        return None

    def segments(
        self, text: str, *, voice: str, speed: float, lang: str, context: object = None
    ) -> Iterator[Audio]:
        for sentence in re.findall(r"[^.!?]+[.!?]*", text):
            if not sentence.strip():
                continue
            with self._lock:
                self.calls.append((sentence.strip(), time.monotonic()))
            if "FAIL" in sentence:
                raise RuntimeError("internal secret: tensor shape mismatch")
            time.sleep(self.delay_s)
            yield tone(len(sentence.split()) * SECONDS_PER_WORD / speed, TONE_HZ[voice])


def tone(seconds: float, hz: float) -> Audio:
    """A sine tone at half scale between Kokoro-like silences."""
    t = np.arange(round(seconds * NATIVE_SAMPLE_RATE)) / NATIVE_SAMPLE_RATE
    body = (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)
    lead = np.zeros(round(LEAD_SILENCE_S * NATIVE_SAMPLE_RATE), dtype=np.float32)
    tail = np.zeros(round(TAIL_SILENCE_S * NATIVE_SAMPLE_RATE), dtype=np.float32)
    return np.concatenate([lead, body, tail])


def served_ms(*words_per_segment: int, speed: float = 1.0) -> float:
    """How long the server's audio for ToneEngine's segments is: each tone keeps ``KEEP_LEAD_S`` of the
    fake's longer lead silence and ``KEEP_TAIL_S`` of its tail (the server shortens both edges)."""
    assert LEAD_SILENCE_S > KEEP_LEAD_S and TAIL_SILENCE_S > KEEP_TAIL_S, "the fake pads less than is kept"
    tones_s = sum(words * SECONDS_PER_WORD / speed for words in words_per_segment)
    return 1000.0 * (tones_s + len(words_per_segment) * (KEEP_LEAD_S + KEEP_TAIL_S))


def dominant_hz(pcm: bytes, sample_rate: int) -> float:
    """The strongest frequency in s16le PCM (tells the voices of ToneEngine apart)."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(samples.size, 1 / sample_rate)[int(np.argmax(spectrum))])
