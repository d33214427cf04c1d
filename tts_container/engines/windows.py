"""Rendering one segment: its prosody once, then its audio window by window (shared by both engines).

Why windows: on a CPU the vocoder renders a 6 s sentence in ~2 s, so a sentence rendered in one call
reaches the listener ~2 s after it was asked for; that is why the client used to cut sentences into
short phrases, each spoken as a sentence of its own (an audible pause and a stretched word at every
cut). Here a sentence's prosody (every phoneme's duration, the pitch and energy curves) is computed
once for the whole segment, and only its audio is rendered in windows: a first short one (~0.4 s of
audio) and each next one larger, so every window is ready before the audio before it has played. The
listener hears the first words after the prosody and one small window, and the sentence as the model
would have spoken it whole: same durations, same pitch, no pause added.

What makes windows join without a seam (measured on the int8 export: the level steps at joins are under
0.1 dB with shared statistics, against ~6 dB with each window's own):

- each window is rendered with :data:`CONTEXT_STEPS` steps of context on both sides (the generator's
  convolutions look ~4 steps each way), which are dropped;
- the sine source continues across windows (:func:`phase_offset`);
- every window of a segment is normalized with the same instance-norm statistics, the voice's pooled
  ones (:mod:`tts_container.engines.norm_stats`);
- consecutive windows overlap by :data:`CROSSFADE_SAMPLES` and are cross-faded (raised cosine).

A segment with context (:mod:`tts_container.synthesis.utterance`) is rendered whole for its prosody, but only
the audio of its own words is used: from its first word's onset when words precede it, to the next word's
onset when words follow (the model's pause between the words stays with the earlier request).

Which statistics, measured against the sentence rendered whole (the level of a piece's words, on the
28 pieces of ``benchmarks.joins``' sentences cut with context, two voices, rendered each way): a call
that vocodes only a segment's own steps with their own statistics is off by 1.3 dB median, 4.5 dB
worst (its instance norms see a different stretch of the utterance), so a segment rendered in one call
with its own statistics is vocoded over its whole utterance and sliced: exactly the model's audio (a
GPU's path, and a short answer's on a CPU). Where the voice's statistics model is known (a CPU), a
segment with context takes the predicted statistics even in one call (1.0 dB median, 2.7 worst, like
the windowed pieces beside it): vocoding its context words too would triple the call.

Window sizes are a function of the segment alone, and whether a segment is windowed at all is the
engine's decision from its speed, once per process (a GPU renders whole sentences faster than a
window's worth of audio plays). Never the server's load: a request rendered again is the same, sample
for sample (the client's reconnect rule relies on it). Letting a listener far ahead take larger
windows or a whole segment was tried: it saves the context rendered twice per window, but a re-sent
request then came back with other seams and, rendered whole, a lead trimmed up to 10 ms differently.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from strands_kokoro.protocol import Word
from tts_container.engines.base import (
    NATIVE_SAMPLE_RATE,
    Audio,
    Segment,
)
from tts_container.engines.norm_stats import (
    NormStats,
    NormStatsModel,
    shares,
)
from tts_container.synthesis.utterance import SpokenSegment
from tts_container.text.g2p import FRAME_SAMPLES, ONSET_LEAD_MS

logger = logging.getLogger(__name__)

STEP_SAMPLES = 300  # one vocoder step (12.5 ms); a duration frame is two steps
# A window's audio is no speech when it is not finite, peaks beyond this, or clips for longer than
# MAX_CLIPPED_SAMPLES: statistics that fail a segment overflow by orders of magnitude (1e7-1e38 measured)
# or clip for milliseconds, and a lone spike past 2 is a click; a window may overshoot full scale by a
# sample or two where speech rendered whole does not (measured: 1.03-1.15 at a window's start).
MAX_SPEECH_PEAK = 2.0
MAX_CLIPPED_SAMPLES = 48  # 2 ms
HARMONICS = 9  # the sine source's fundamental and eight overtones
# Steps of context rendered and dropped on each side of a cut between windows. Measured on the int8
# export (16 sentences cut every 50 steps, against 32 steps of context): the largest sample error within
# 25 ms of a cut is 0.067 at 6 steps, 0.058 at 8 and 0.34 at 4; the error away from cuts is the
# vocoder's noise source, the same at every context (SNR ~23 dB).
CONTEXT_STEPS = 6
CROSSFADE_SAMPLES = 240  # 10 ms
FIRST_WINDOW_STEPS = 24  # 0.3 s of audio
# A segment up to this long is rendered in one call with its own statistics: the model's own audio, and
# a first window would not come much sooner (0.8 s of audio).
ONE_CALL_STEPS = 64
ONSET_LEAD_SAMPLES = round(ONSET_LEAD_MS * NATIVE_SAMPLE_RATE / 1000)
# Silence rendered before the first word when nothing precedes it: the joiner trims it to its natural
# length by energy. The first sound comes 5-70 ms before the first word's frame (16 sentences), so 100
# ms keeps at least 30 ms of silence before it, more than the joiner keeps.
DECODE_LEAD_SAMPLES = round(0.10 * NATIVE_SAMPLE_RATE)
# The first samples of every vocoder call ring (its convolutions begin at the call's edge: measured up
# to 1.15 at sample 9 with a voice's own statistics, 12.6 with predicted ones). Passed on, the ringing
# would defeat the joiner's lead trim (its silence threshold: ~100 ms of silence kept before the first
# word) and fail the window check (a short request rendered whole). So every call starts a step before
# the audio used from it, and a segment's audio never begins in the utterance's first step (inside the
# leading pad's silence: every token lasts at least a frame).
EDGE_STEPS = 1
# Rendered after a segment's last sounding phoneme when nothing follows it. Kokoro holds that phoneme
# 155-360 ms past its sound (80 sentences, median 280 ms), and the punctuation and pad after it add
# ~180 ms more that the joiner trims (it keeps a sentence's 250 ms pause, a clause's 120): ending 100 ms
# past the phoneme leaves at least 255 ms of silence and renders ~7 steps a sentence fewer.
DECODE_TAIL_SAMPLES = round(0.10 * NATIVE_SAMPLE_RATE)
_SILENT = frozenset(" .,;:!?…—–-\"'()[]«»“”¿¡")

Pitch = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Prosody:
    """One segment up to its vocoder: per-token durations (frames, pads included), the pitch curve
    (Hz, one value per step) and the engine's own tensors for the vocoder."""

    durations: tuple[int, ...]
    pitch: Pitch
    features: Any

    @property
    def steps(self) -> int:
        return int(self.pitch.shape[-1])


class Vocoder(Protocol):
    """What an engine offers for windowed rendering."""

    @property
    def vocab(self) -> Container[str]:
        """Phoneme symbols the model knows (the others are dropped before it, and have no duration)."""
        ...

    def prosody(self, phonemes: str, *, voice: str, speed: float, style_tokens: int | None = None) -> Prosody:
        """Run everything before the vocoder on a whole segment (with the voice's style row for an
        utterance of ``style_tokens`` tokens; default: the segment's own)."""
        ...

    def vocode(
        self, prosody: Prosody, start: int, stop: int, *, phase: Pitch, stats: NormStats | None
    ) -> tuple[Audio, NormStats | None]:
        """Audio of steps ``[start, stop)`` (``STEP_SAMPLES`` each) and the statistics it was normalized
        with (its own when ``stats`` is None; None from an engine that cannot tell)."""
        ...


def phase_offset(pitch: Pitch, step: int) -> Pitch:
    """What the steps before ``step`` add to the sine source's cumulative phase, per harmonic.

    The source accumulates ``frac(f0 * h / 24000)`` per step (its per-sample increment at the step's
    pitch) and multiplies by the 300 samples of a step; only the fractional part of a cycle matters, so
    the offset is returned modulo one cycle, in the cumulative sum's units (1/300 of a cycle).
    """
    f0 = np.asarray(pitch, dtype=np.float64).reshape(-1)[:step]
    harmonics = np.arange(1, HARMONICS + 1, dtype=np.float64)
    increments = np.mod(f0[:, None] * harmonics[None, :] / NATIVE_SAMPLE_RATE, 1.0).sum(axis=0)
    return (np.mod(increments * STEP_SAMPLES, 1.0) / STEP_SAMPLES).astype(np.float32)


def ladder(steps: int, growth: float | None) -> list[tuple[int, int]]:
    """Window bounds over ``steps`` steps: one call when ``growth`` is None or the segment is short
    (:data:`ONE_CALL_STEPS`); else a first window of :data:`FIRST_WINDOW_STEPS`, each next ``growth``
    times larger, and the rest in the last one once it is less than one and a half windows."""
    if growth is None or steps <= ONE_CALL_STEPS:
        return [(0, steps)]
    bounds: list[tuple[int, int]] = []
    start, size = 0, FIRST_WINDOW_STEPS
    while True:
        following = math.ceil(size * growth)
        if steps - start <= size + following // 2:
            bounds.append((start, steps))
            return bounds
        bounds.append((start, start + size))
        start, size = start + size, following


@dataclass(frozen=True, slots=True)
class Region:
    """The samples of a segment's audio that are its own: ``[begin, end)``, and where words are heard
    (ms from ``begin``)."""

    begin: int
    end: int
    words: tuple[Word, ...]


def own_region(segment: SpokenSegment, durations: Sequence[int], known: Container[str]) -> Region | None:
    """Where the segment's own words are in its audio, from the model's durations (None: no sound)."""
    text = segment.phonemes.text
    token_of: dict[int, int] = {}
    token = 1  # token 0 is the leading pad
    for index, char in enumerate(text):
        if char in known:
            token_of[index] = token
            token += 1
    starts = np.concatenate([[0], np.cumsum(np.asarray(durations, dtype=np.int64))])
    total = int(starts[-1]) * FRAME_SAMPLES
    own_start, own_stop = segment.own
    sounding = [i for i in range(own_start, own_stop) if i in token_of and text[i] not in _SILENT]
    if not sounding:
        return None
    first_frame = int(starts[token_of[sounding[0]]])
    if segment.continues_before:
        begin = first_frame * FRAME_SAMPLES - ONSET_LEAD_SAMPLES
    else:
        begin = first_frame * FRAME_SAMPLES - DECODE_LEAD_SAMPLES
    following = [i for i in range(own_stop, len(text)) if i in token_of and text[i] not in _SILENT]
    if segment.ending == "continues" and following:
        end = int(starts[token_of[following[0]]]) * FRAME_SAMPLES - ONSET_LEAD_SAMPLES
    else:
        end = int(starts[token_of[sounding[-1]] + 1]) * FRAME_SAMPLES + DECODE_TAIL_SAMPLES
    begin, end = max(EDGE_STEPS * STEP_SAMPLES, begin), min(total, end)
    offset_ms = begin / NATIVE_SAMPLE_RATE * 1000
    words = tuple(
        Word(w.text, w.start_ms - offset_ms, w.end_ms - offset_ms)
        for w in segment.phonemes.word_timings(durations, known)
    )
    return Region(begin, end, words)


def render(
    vocoder: Vocoder,
    segment: SpokenSegment,
    *,
    voice: str,
    speed: float,
    stats_model: NormStatsModel | None,
    growth: float | None,
) -> Iterator[Segment]:
    """The segment's own audio as one or more pieces, each ready as soon as its window is rendered.

    Windowed only with the voice's statistics model and a ``growth`` (the engine is slow enough to need
    it); otherwise one call: with the predicted statistics for a segment with context where the model
    is known, else over the whole utterance with its own statistics.
    """
    prosody = vocoder.prosody(
        segment.phonemes.text, voice=voice, speed=speed, style_tokens=segment.style_tokens
    )
    region = own_region(segment, prosody.durations, vocoder.vocab)
    if region is None or region.end <= region.begin:
        return
    first_step = region.begin // STEP_SAMPLES
    last_step = min(prosody.steps, -(-region.end // STEP_SAMPLES))
    steps = last_step - first_step
    bounds = ladder(steps, growth if stats_model is not None else None)
    stats = None
    if stats_model is not None and (len(bounds) > 1 or segment.has_context):
        stats = stats_model.at(*_shares_and_steps(prosody, segment, vocoder.vocab))
    held = np.zeros(0, dtype=np.float32)  # the previous window's audio past its end, to cross-fade
    half = CROSSFADE_SAMPLES // 2
    lead: Literal["trim", "exact"] = "exact" if segment.continues_before else "trim"
    for index, (a, b) in enumerate(bounds):
        start, stop = first_step + a, first_step + b
        first, last = index == 0, index == len(bounds) - 1
        pre, post = _context(start, stop, prosody.steps, first=first, last=last, whole=stats is None)
        audio, _ = vocoder.vocode(
            prosody, start - pre, stop + post, phase=phase_offset(prosody.pitch, start - pre), stats=stats
        )
        origin = (start - pre) * STEP_SAMPLES  # the sample of the segment's audio where ``audio`` starts
        lo = region.begin if first else start * STEP_SAMPLES - half
        hi = region.end if last else stop * STEP_SAMPLES - half
        # What of it is used: the piece and the cross-fade after it (the context around is not heard,
        # and the vocoder's last steps past the segment's own region ring far above speech).
        used = audio[lo - origin : hi - origin + (0 if last else CROSSFADE_SAMPLES)]
        if stats is not None and not is_speech(used):
            audio = _rendered_whole(vocoder, prosody, voice=voice, failed_window=index)
            origin, stats, last, hi = 0, None, True, region.end
        piece = _fade_in(np.asarray(audio[lo - origin : hi - origin], dtype=np.float32), held)
        if not last:
            held = np.asarray(audio[hi - origin : hi - origin + CROSSFADE_SAMPLES], dtype=np.float32)
        yield Segment(
            piece,
            region.words if first else (),
            first=first,
            last=last,
            lead=lead,
            ending=segment.ending,
        )
        if last:
            return


def _shares_and_steps(
    prosody: Prosody, segment: SpokenSegment, vocab: Container[str]
) -> tuple[float, int, float]:
    """What the statistics model predicts from: the utterance's share of silence, its length in
    steps and its share of sibilants."""
    silence, sibilance = shares(prosody.durations, segment.phonemes.text, vocab)
    return silence, prosody.steps, sibilance


def _rendered_whole(vocoder: Vocoder, prosody: Prosody, *, voice: str, failed_window: int) -> Audio:
    """The whole utterance in one call with its own statistics, for a segment whose predicted statistics
    made noise: the noise is never sent, and the rest of the segment comes from this call (a wait of
    that call, where a window was due)."""
    logger.warning(
        "voice %s: window %d of a %d-step segment overflowed with predicted statistics; the rest is "
        "rendered whole",
        voice,
        failed_window,
        prosody.steps,
    )
    audio, _ = vocoder.vocode(prosody, 0, prosody.steps, phase=phase_offset(prosody.pitch, 0), stats=None)
    return audio


def _context(start: int, stop: int, steps: int, *, first: bool, last: bool, whole: bool) -> tuple[int, int]:
    """How many steps of context a window renders before and after its own ``start:stop``: the model
    needs context to sound the same on both sides of a cut, and a render with the utterance's own
    statistics (``whole``) takes all of it, so its audio is the whole-utterance rendition's."""
    if whole:
        return start, steps - stop
    pre = min(EDGE_STEPS if first else CONTEXT_STEPS, start)
    post = 0 if last else min(CONTEXT_STEPS, steps - stop)
    return pre, post


def _fade_in(piece: np.ndarray, held: np.ndarray) -> np.ndarray:
    """``piece`` with the previous window's ``held`` tail cross-faded over its start, so a cut between
    windows has no click."""
    if not held.size:
        return piece
    ramp = _ramp(held.size)
    piece = piece.copy()
    piece[: held.size] = held * (1.0 - ramp) + piece[: held.size] * ramp
    return piece


def is_speech(audio: Audio) -> bool:
    """Whether a window's raw audio can be speech: finite, within :data:`MAX_SPEECH_PEAK`, and beyond
    full scale for at most :data:`MAX_CLIPPED_SAMPLES`."""
    samples = np.abs(np.asarray(audio, dtype=np.float32))
    if not np.isfinite(samples).all():
        return False
    if not samples.size:
        return True
    clipped = int(np.count_nonzero(samples > 1.0))
    return float(samples.max()) <= MAX_SPEECH_PEAK and clipped <= MAX_CLIPPED_SAMPLES


def _ramp(n: int) -> npt.NDArray[np.float32]:
    """A raised-cosine fade-in of ``n`` samples (its complement fades out)."""
    return (0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, n, dtype=np.float32))).astype(np.float32)
