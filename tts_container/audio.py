"""Turning engine segments into one click-free PCM stream per request.

Kokoro synthesizes a long text segment by segment (the 510-phoneme limit, clause boundaries). Played
back to back, raw segments carry two defects: long leading/trailing silences (a late first sound and
over-long gaps) and a hard cut where a segment was split mid-sound (an audible click). The joiner
shortens edge silences to a natural length instead of removing them (a sentence end keeps its pause),
fades the edges over a few milliseconds so every join starts and ends at zero, and resamples with one
streaming soxr resampler per request so its filter state carries across joins.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import soxr

from strands_kokoro.protocol import Word
from tts_container.engines.base import NATIVE_SAMPLE_RATE, Audio

# Below this amplitude (about -46 dBFS) a sample counts as silence.
SILENCE_THRESHOLD = 0.005
# Silence kept before the first sound of a segment: enough for the fade, short for a fast first sound.
KEEP_LEAD_S = 0.015
# Silence kept after the last sound of a segment: Kokoro's natural pause, capped so gaps stay short.
KEEP_TAIL_S = 0.25
FADE_S = 0.005
# One binary frame carries at most this many bytes (a bit under 0.7 s of 24 kHz audio).
MAX_FRAME_BYTES = 32 * 1024


def trim_edges(audio: Audio, **limits: Any) -> Audio:
    """Shorten the silence at both edges (see :func:`edges_to_keep`; ``limits`` are its keywords).

    A segment that is silence throughout comes back empty: it carries nothing worth a frame.
    """
    start, stop = edges_to_keep(audio, **limits)
    return audio[start:stop]


def edges_to_keep(
    audio: Audio,
    *,
    sample_rate: int = NATIVE_SAMPLE_RATE,
    keep_lead_s: float = KEEP_LEAD_S,
    keep_tail_s: float = KEEP_TAIL_S,
    threshold: float = SILENCE_THRESHOLD,
) -> tuple[int, int]:
    """The samples to keep: at most ``keep_lead_s`` / ``keep_tail_s`` of silence at either edge
    (``(0, 0)`` for silence throughout)."""
    loud = np.flatnonzero(np.abs(audio) > threshold)
    if loud.size == 0:
        return 0, 0
    start = max(0, int(loud[0]) - round(keep_lead_s * sample_rate))
    stop = min(audio.size, int(loud[-1]) + 1 + round(keep_tail_s * sample_rate))
    return start, stop


def fade_edges(audio: Audio, *, sample_rate: int = NATIVE_SAMPLE_RATE, fade_s: float = FADE_S) -> Audio:
    """Apply a short raised-cosine fade-in and fade-out so a join never jumps (returns a copy)."""
    out = np.array(audio, dtype=np.float32, copy=True)
    n = min(round(fade_s * sample_rate), out.size // 2)
    if n > 0:
        ramp = (0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, n, dtype=np.float32))).astype(np.float32)
        out[:n] *= ramp
        out[-n:] *= ramp[::-1]
    return out


def to_s16le(audio: Audio) -> bytes:
    """Float32 in [-1, 1] to signed 16-bit little-endian PCM (clipped, not wrapped)."""
    clipped = np.clip(audio, -1.0, 1.0)
    return (clipped * 32767.0).round().astype("<i2").tobytes()


def split_frames(pcm: bytes, max_bytes: int = MAX_FRAME_BYTES) -> list[bytes]:
    """Cut PCM into frames of at most ``max_bytes`` (an even count, so no sample is split)."""
    step = max_bytes - max_bytes % 2
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]


class StreamResampler:
    """One soxr stream per request: filter state carries across segments, so joins stay smooth.

    At the native rate it passes audio through untouched (no filter delay, no extra work).
    """

    def __init__(self, out_rate: int, in_rate: int = NATIVE_SAMPLE_RATE) -> None:
        self.out_rate = out_rate
        self._stream = (
            None if out_rate == in_rate else soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32")
        )

    def process(self, audio: Audio) -> Audio:
        if self._stream is None:
            return audio
        return np.asarray(self._stream.resample_chunk(audio, last=False), dtype=np.float32)

    def flush(self) -> Audio:
        """The samples soxr still holds in its filter; call once after the last segment."""
        if self._stream is None:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(
            self._stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True), dtype=np.float32
        )


class SegmentJoiner:
    """Per request: engine segment in, PCM bytes out (trimmed, faded, resampled, s16le).

    Word timings follow the audio: a segment's words move by the silence trimmed off its start and by
    the request's audio before it, and end where the kept audio ends (``words``: the last segment's).
    Resampling changes no time: soxr's stream keeps the output aligned with the input.
    """

    def __init__(self, sample_rate: int) -> None:
        self._resampler = StreamResampler(sample_rate)
        self._elapsed_ms = 0.0  # audio of the request before this segment, as the client hears it
        self.words: tuple[Word, ...] = ()

    def segment(self, audio: Audio, words: tuple[Word, ...] = ()) -> bytes:
        samples = np.asarray(audio, dtype=np.float32).reshape(-1)
        start, stop = edges_to_keep(samples)
        kept_ms = (stop - start) / NATIVE_SAMPLE_RATE * 1000.0
        shift_ms = start / NATIVE_SAMPLE_RATE * 1000.0
        self.words = tuple(
            Word(
                word.text,
                self._elapsed_ms + min(kept_ms, max(0.0, word.start_ms - shift_ms)),
                self._elapsed_ms + min(kept_ms, max(0.0, word.end_ms - shift_ms)),
            )
            for word in words
        )
        self._elapsed_ms += kept_ms
        if stop <= start:
            return b""
        return to_s16le(self._resampler.process(fade_edges(samples[start:stop])))

    def finish(self) -> bytes:
        return to_s16le(self._resampler.flush())
