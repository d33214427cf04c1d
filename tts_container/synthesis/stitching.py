"""Turning engine segments into one click-free PCM stream per request.

Kokoro synthesizes a long text segment by segment (the 510-phoneme limit, clause boundaries). Played
back to back, raw segments carry two defects: long leading/trailing silences (a late first sound and
over-long gaps) and a hard cut where a segment was split mid-sound (an audible click). The joiner
shortens edge silences to a natural length instead of removing them (a sentence end keeps its pause),
fades the edges over a few milliseconds so every join starts and ends at zero, and resamples with one
streaming soxr resampler per request so its filter state carries across joins.
"""

from __future__ import annotations

import math

import numpy as np
import soxr

from strands_kokoro.protocol import Word
from tts_container.engines.base import NATIVE_SAMPLE_RATE, Audio, Segment

# Below this level (about -46 dBFS, RMS over SOUND_FRAME_SAMPLES) audio counts as silence. Measured in
# frames, not samples: the vocoder's leading silence holds lone blips of 0.01 (a sample or two every few
# ms), which a sample threshold would take for the first sound, keeping silence before it.
SILENCE_THRESHOLD = 0.005
SOUND_FRAME_SAMPLES = 120  # 5 ms at 24 kHz
# Silence kept before the first sound of a segment: enough for the fade, short for a fast first sound.
KEEP_LEAD_S = 0.015
# Silence kept after the last sound of a segment that ends a sentence: Kokoro's natural pause, capped
# so gaps stay short; after one that ends at a clause mark (a request cut at a comma), a comma's pause.
KEEP_TAIL_S = 0.25
KEEP_CLAUSE_TAIL_S = 0.12
FADE_S = 0.005
# One binary frame carries at most this many bytes (a bit under 0.7 s of 24 kHz audio).
MAX_FRAME_BYTES = 32 * 1024


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


def sound_bounds(samples: Audio) -> tuple[int, int] | None:
    """Where the sound in ``samples`` begins and ends (sample offsets; None: silence throughout): the
    first and last :data:`SOUND_FRAME_SAMPLES` frame above :data:`SILENCE_THRESHOLD`."""
    n = SOUND_FRAME_SAMPLES
    frames = -(-samples.size // n)
    if not frames:
        return None
    padded = np.zeros(frames * n, dtype=np.float64)
    padded[: samples.size] = samples
    loud = np.flatnonzero(np.sqrt(np.mean(padded.reshape(frames, n) ** 2, axis=1)) > SILENCE_THRESHOLD)
    if not loud.size:
        return None
    return int(loud[0]) * n, min(samples.size, (int(loud[-1]) + 1) * n)


class SegmentJoiner:
    """Per request: engine pieces in, PCM bytes out (edges trimmed, faded, resampled, s16le).

    A segment may come in several pieces (windows of one synthesis, already cross-faded by the engine):
    only its edges are trimmed. The silence before its first sound is shortened to ``KEEP_LEAD_S``
    (unless the piece starts exactly at a word: ``lead="exact"``), and after its last sound it keeps the
    pause its ``ending`` calls for: a sentence's (``KEEP_TAIL_S``), a clause's (``KEEP_CLAUSE_TAIL_S``),
    or none added (``"continues"``: the engine cut it where the next word begins). Quiet audio at the end
    of a piece is held back until the next piece shows whether it was a pause inside the segment or the
    start of its final silence, so a segment's tail is trimmed wherever its last sound fell.

    Word timings follow the audio: a segment's words move by the silence trimmed off its start and by
    the request's audio before it. ``words`` after each piece: the words placed by it, handed out as soon
    as the trimmed lead is known (the first piece, with all the segment's words, usually), except the
    segment's last word, which waits for the last piece to be clamped inside the audio kept.
    Resampling changes no time: soxr's
    stream keeps the output aligned with the input.
    """

    def __init__(self, sample_rate: int) -> None:
        self._resampler = StreamResampler(sample_rate)
        self._elapsed = 0  # samples of the request emitted before the current segment
        self._emitted = 0  # samples of the current segment emitted so far
        self._trimmed = 0  # samples trimmed off the current segment's start
        self._in_lead = False
        self._fade_in = False
        self._quiet = np.zeros(0, dtype=np.float32)
        self._unplaced: tuple[Word, ...] = ()  # the current segment's words not yet handed out
        self.words: tuple[Word, ...] = ()

    def segment(self, piece: Segment | Audio) -> bytes:
        if not isinstance(piece, Segment):
            piece = Segment(np.asarray(piece, dtype=np.float32))
        samples = np.asarray(piece.audio, dtype=np.float32).reshape(-1)
        self.words = ()
        if piece.first:
            self._elapsed += self._emitted
            self._emitted = self._trimmed = 0
            self._quiet = np.zeros(0, dtype=np.float32)
            self._in_lead, self._fade_in = piece.lead == "trim", True
            self._unplaced = piece.words
        if self._in_lead:
            sound = sound_bounds(samples)
            cut = (
                samples.size if sound is None else max(0, sound[0] - round(KEEP_LEAD_S * NATIVE_SAMPLE_RATE))
            )
            self._trimmed += cut
            samples = samples[cut:]
            self._in_lead = sound is None
        samples = np.concatenate([self._quiet, samples]) if self._quiet.size else samples
        self._quiet = np.zeros(0, dtype=np.float32)
        if piece.last:
            if piece.ending != "continues" and not self._in_lead:
                keep = KEEP_CLAUSE_TAIL_S if piece.ending == "clause" else KEEP_TAIL_S
                sound = sound_bounds(samples)
                stop = (0 if sound is None else sound[1]) + round(keep * NATIVE_SAMPLE_RATE)
                samples = samples[: min(samples.size, stop)]
            if self._in_lead:
                samples = samples[:0]  # silence throughout: nothing worth a frame
        else:
            sound = sound_bounds(samples)
            keep_to = 0 if sound is None else sound[1]
            self._quiet, samples = samples[keep_to:], samples[:keep_to]
        samples = self._fade(samples, fade_out=piece.last)
        self._emitted += samples.size
        if piece.last:
            self.words, self._unplaced = self._placed(self._unplaced, clamp=True), ()
        elif not self._in_lead and len(self._unplaced) > 1:
            self.words, self._unplaced = self._placed(self._unplaced[:-1], clamp=False), self._unplaced[-1:]
        if not samples.size:
            return b""
        return to_s16le(self._resampler.process(samples))

    def _fade(self, samples: Audio, *, fade_out: bool) -> Audio:
        """A raised-cosine fade-in at a segment's first sound and a fade-out at its end."""
        n = round(FADE_S * NATIVE_SAMPLE_RATE)
        if not samples.size or not (self._fade_in or fade_out):
            return samples
        out = np.array(samples, dtype=np.float32, copy=True)
        ramp = (0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, min(n, out.size), dtype=np.float32))).astype(
            np.float32
        )
        if self._fade_in:
            out[: ramp.size] *= ramp
            self._fade_in = False
        if fade_out:
            out[-ramp.size :] *= ramp[::-1]
        return out

    def _placed(self, words: tuple[Word, ...], *, clamp: bool) -> tuple[Word, ...]:
        """The segment's words in the request's audio (ms); ``clamp``: inside what was kept of the
        segment (known once its last piece is in; the words before the last end before it anyway)."""
        to_ms = 1000.0 / NATIVE_SAMPLE_RATE
        shift, before = self._trimmed * to_ms, self._elapsed * to_ms
        kept = self._emitted * to_ms if clamp else math.inf
        return tuple(
            Word(
                word.text,
                before + min(kept, max(0.0, word.start_ms - shift)),
                before + min(kept, max(0.0, word.end_ms - shift)),
            )
            for word in words
        )

    def finish(self) -> bytes:
        return to_s16le(self._resampler.flush())
