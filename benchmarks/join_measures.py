"""What :mod:`benchmarks.joins` measures in two renditions of the same words: the silence at a cut, the
words' durations, the pitch and level steps across it, and the level steps at window seams.

Kept apart from the benchmark's driver (which renders the sentences) so each reads as one concept.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from strands_kokoro.protocol import Word
from tts_container.engines.base import NATIVE_SAMPLE_RATE

QUIET_DB = -40.0
FRAME_S = 0.010
Audio = npt.NDArray[np.float32]


@dataclass
class Rendition:
    """What a client received for a sentence: its audio, word timings, and the engine's timings."""

    audio: Audio
    words: list[Word]
    first_audio_s: float
    engine_s: float
    seams: list[int] = field(default_factory=list)  # samples where a window began (raw renditions)


@dataclass
class Join:
    sentence: int
    voice: str
    before: str
    after: str
    added_silence_ms: float
    before_ratio: float
    after_ratio: float
    pitch_step_st: float  # |cut step - whole step|, semitones
    level_step_db: float  # |cut step - whole step|, dB


def _span(audio: Audio, start_ms: float, end_ms: float) -> Audio:
    a, b = round(start_ms * 24), round(end_ms * 24)
    return audio[max(0, a) : max(a, b)]


def longest_quiet_ms(audio: Audio) -> float:
    n = round(FRAME_S * NATIVE_SAMPLE_RATE)
    frames = audio[: audio.size // n * n].reshape(-1, n) if audio.size >= n else audio.reshape(1, -1)
    level = 20 * np.log10(np.sqrt(np.mean(frames.astype(np.float64) ** 2, axis=1)) + 1e-9)
    run = best = 0
    for quiet in level < QUIET_DB:
        run = run + 1 if quiet else 0
        best = max(best, run)
    return best * FRAME_S * 1000


def level_db(audio: Audio) -> float:
    if not audio.size:
        return -120.0
    return float(20 * np.log10(np.sqrt(np.mean(audio.astype(np.float64) ** 2)) + 1e-9))


def median_f0(audio: Audio) -> float | None:
    """Median F0 (Hz) over the voiced 40 ms frames (normalized autocorrelation peak > 0.6)."""
    n, hop = 960, 240
    f0s = []
    for at in range(0, audio.size - n, hop):
        frame = audio[at : at + n].astype(np.float64)
        frame -= frame.mean()
        if np.sqrt(np.mean(frame**2)) < 0.01:
            continue
        spectrum = np.fft.rfft(frame, 2 * n)
        ac = np.fft.irfft(spectrum * np.conj(spectrum))[:n]
        lo, hi = NATIVE_SAMPLE_RATE // 400, NATIVE_SAMPLE_RATE // 70
        lag = lo + int(np.argmax(ac[lo:hi]))
        if ac[0] > 0 and ac[lag] / ac[0] > 0.6:
            f0s.append(NATIVE_SAMPLE_RATE / lag)
    return float(np.median(f0s)) if f0s else None


def _step_st(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else 12 * float(np.log2(b / a))


Pair = tuple[Word, Word, Word, Word]


def word_pairs(cut: Rendition, whole: Rendition, boundaries: Sequence[int]) -> Iterator[Pair]:
    """At each cut: the word before and after it in ``cut``, and the same two words in ``whole``
    (matched by position: both renditions say the same written words)."""
    if [w.text for w in cut.words] != [w.text for w in whole.words]:
        return  # the G2P said the pieces' words differently: no fair comparison for this sentence
    for index in boundaries:
        if index + 1 < len(cut.words):
            yield cut.words[index], cut.words[index + 1], whole.words[index], whole.words[index + 1]


def _word_step(audio: Audio, a: Word, b: Word) -> tuple[float | None, float]:
    """Pitch step (semitones) and level step (dB) from word ``a`` to word ``b``."""
    first, second = _span(audio, a.start_ms, a.end_ms), _span(audio, b.start_ms, b.end_ms)
    return _step_st(median_f0(first), median_f0(second)), level_db(second) - level_db(first)


def measure_joins(
    sentence: int, voice: str, cut: Rendition, whole: Rendition, boundaries: Sequence[int]
) -> list[Join]:
    joins = []
    for a, b, wa, wb in word_pairs(cut, whole, boundaries):
        silence = longest_quiet_ms(_span(cut.audio, a.end_ms - 40, b.start_ms + 40))
        silence_whole = longest_quiet_ms(_span(whole.audio, wa.end_ms - 40, wb.start_ms + 40))
        step, level = _word_step(cut.audio, a, b)
        step_whole, level_whole = _word_step(whole.audio, wa, wb)
        joins.append(
            Join(
                sentence,
                voice,
                a.text,
                b.text,
                silence - silence_whole,
                (a.end_ms - a.start_ms) / max(1.0, wa.end_ms - wa.start_ms),
                (b.end_ms - b.start_ms) / max(1.0, wb.end_ms - wb.start_ms),
                abs(step - step_whole) if step is not None and step_whole is not None else float("nan"),
                abs(level - level_whole),
            )
        )
    return joins


def seam_steps(streamed: Rendition, whole: Rendition) -> list[dict[str, float]]:
    """At each window seam: silence added and the level step across it (60 ms each side), against
    ``whole`` at the same sample (both renditions share one timeline: same durations, same region)."""
    out = []
    n = round(0.06 * NATIVE_SAMPLE_RATE)
    for seam in streamed.seams:
        if seam - n < 0 or seam + n > min(streamed.audio.size, whole.audio.size):
            continue
        s_step = level_db(streamed.audio[seam : seam + n]) - level_db(streamed.audio[seam - n : seam])
        w_step = level_db(whole.audio[seam : seam + n]) - level_db(whole.audio[seam - n : seam])
        around = slice(seam - n, seam + n)
        quiet = longest_quiet_ms(streamed.audio[around]) - longest_quiet_ms(whole.audio[around])
        if level_db(whole.audio[seam - n : seam + n]) > QUIET_DB:  # a seam in silence steps nowhere
            out.append({"added_silence_ms": quiet, "level_step_db": abs(s_step - w_step)})
    return out


def share(joins: Sequence[Join], test: Callable[[Join], bool]) -> float:
    """The share of ``joins`` that pass ``test``."""
    return round(sum(1 for j in joins if test(j)) / len(joins), 3) if joins else 0.0


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median, mean and the value farthest from zero (NaN, where a word had no pitch, left out)."""
    clean = [float(v) for v in values if v == v]
    if not clean:
        return {}
    worst = max(clean, key=lambda v: abs(v))
    return {
        "median": round(statistics.median(clean), 3),
        "worst": round(worst, 3),
        "mean": round(statistics.fmean(clean), 3),
    }
