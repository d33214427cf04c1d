"""The engine-independent half of windowed rendering: window bounds, the sine source's phase, where a
segment's own words are, cross-faded windows, and the vocoder statistics model. Deterministic, synthetic
audio; the real engines are ``test_engine_windows_real.py`` (onnx) and ``test_torch_engine.py``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tts_container.engines.base import Segment
from tts_container.engines.norm_stats import NormStats, NormStatsModel, Sample, VoiceNormStats
from tts_container.engines.windows import (
    CONTEXT_STEPS,
    CROSSFADE_SAMPLES,
    DECODE_LEAD_SAMPLES,
    EDGE_STEPS,
    FIRST_WINDOW_STEPS,
    HARMONICS,
    ONE_CALL_STEPS,
    ONSET_LEAD_SAMPLES,
    STEP_SAMPLES,
    Pitch,
    Prosody,
    ladder,
    own_region,
    phase_offset,
    render,
)
from tts_container.synthesis.stitching import KEEP_LEAD_S, SOUND_FRAME_SAMPLES, SegmentJoiner
from tts_container.synthesis.utterance import SpokenSegment
from tts_container.text.g2p import FRAME_SAMPLES, Phonemes


@pytest.mark.parametrize("steps", [1, 40, 64, 65, 100, 333, 1000, 4000])
@pytest.mark.parametrize("growth", [1.5, 2.0])
def test_windows_tile_the_segment_and_grow(steps: int, growth: float) -> None:
    bounds = ladder(steps, growth)
    assert bounds[0][0] == 0 and bounds[-1][1] == steps
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))  # contiguous, no overlap
    if steps <= ONE_CALL_STEPS:
        assert bounds == [(0, steps)]  # a short segment: one call
    else:
        sizes = [b - a for a, b in bounds]
        assert sizes[0] == FIRST_WINDOW_STEPS
        assert all(later >= earlier for earlier, later in itertools.pairwise(sizes[:-1]))
    assert ladder(steps, None) == [(0, steps)]


def test_phase_offset_is_the_sine_sources_cumulative_phase_modulo_one_cycle() -> None:
    rng = np.random.default_rng(3)
    pitch = rng.uniform(80, 300, 50).astype(np.float32)
    pitch[10:15] = 0.0  # unvoiced steps add nothing
    for step in (0, 1, 17, 50):
        offset = phase_offset(pitch, step)
        assert offset.shape == (HARMONICS,)
        for h in range(1, HARMONICS + 1):
            cycles = sum((float(f) * h / 24_000) % 1.0 for f in pitch[:step]) * STEP_SAMPLES
            assert offset[h - 1] * STEP_SAMPLES == pytest.approx(cycles % 1.0, abs=1e-4)


@dataclass
class SineVocoderDouble:
    """A test double of an engine's two halves: 1-frame tokens, and audio that is a pure function of the
    absolute sample index (so any window, with any context, renders the same samples)."""

    durations: tuple[int, ...]
    calls: list[tuple[int, int, bool]] = field(default_factory=list)

    @property
    def vocab(self) -> frozenset[str]:
        return frozenset("abcdefghijklmnopqrstuvwxyz .,")

    def prosody(self, phonemes: str, *, voice: str, speed: float, style_tokens: int | None = None) -> Prosody:
        steps = 2 * sum(self.durations)
        return Prosody(self.durations, np.full(steps, 150.0, dtype=np.float32), None)

    def vocode(
        self, prosody: Prosody, start: int, stop: int, *, phase: Pitch, stats: NormStats | None
    ) -> tuple[np.ndarray, NormStats | None]:
        self.calls.append((start, stop, stats is not None))
        n = np.arange(start * STEP_SAMPLES, stop * STEP_SAMPLES)
        return (0.5 * np.sin(2 * np.pi * 220.0 * n / 24_000)).astype(np.float32), stats


def spoken(
    text: str, own: tuple[int, int], *, before: bool = False, ending: str = "sentence"
) -> SpokenSegment:
    """A segment whose own part is ``text[own[0]:own[1]]``; context characters belong to no word."""
    words = tuple(text.split())
    word_of: list[int] = []
    index = 0
    for at, char in enumerate(text):
        if char == " ":
            index += 1
        inside = own[0] <= at < own[1]
        word_of.append(index if inside and char not in " .," else -1)
    return SpokenSegment(Phonemes(text, words, tuple(word_of)), own, before, ending)  # type: ignore[arg-type]


def stats_model(layers: int = 2) -> NormStatsModel:
    one = tuple(np.ones((1, 4, 1), np.float32) for _ in range(layers))
    zero = tuple(np.zeros((1, 4, 1), np.float32) for _ in range(layers))
    bounds = (np.array([0.0, 1.0, 0.0, 1.0], np.float32),)
    return NormStatsModel(zero, one, zero, one, zero, one, zero, bounds)


def test_windows_cross_fade_into_exactly_the_audio_of_one_call() -> None:
    """With audio that does not depend on the window, the windows, their contexts and the cross-fades
    must give back exactly one call's samples: any gap, overlap or misplaced fade would show."""
    text = "abcdefghij " * 40
    segment = spoken(text.strip(), (0, len(text.strip())))
    durations = (1, *(3 if c != " " else 1 for c in text.strip()), 2)  # pads, letters, spaces
    whole_double = SineVocoderDouble(durations)
    (whole,) = render(whole_double, segment, voice="v", speed=1.0, stats_model=None, growth=1.5)
    double = SineVocoderDouble(durations)
    pieces = list(render(double, segment, voice="v", speed=1.0, stats_model=stats_model(), growth=1.5))
    assert len(pieces) > 2 and pieces[0].first and pieces[-1].last
    assert not any(p.first for p in pieces[1:]) and not any(p.last for p in pieces[:-1])
    assert all(stats for _, _, stats in double.calls)  # every window shares the given statistics
    joined = np.concatenate([p.audio for p in pieces])
    assert joined.size == whole.audio.size
    np.testing.assert_allclose(joined, whole.audio, atol=1e-5)
    # Neighbouring windows were rendered with context on both sides: their calls overlap by twice it.
    for (_, end, _), (start, _, _) in itertools.pairwise(double.calls):
        assert end - start == 2 * CONTEXT_STEPS
    assert pieces[0].words and not any(p.words for p in pieces[1:])  # known before any window is vocoded


def test_windows_join_with_a_crossfade_not_a_cut() -> None:
    """Windows whose audio differs (as two renditions do) meet in a raised-cosine cross-fade."""

    class LevelPerWindowDouble(SineVocoderDouble):
        def vocode(self, prosody, start, stop, *, phase, stats):  # type: ignore[no-untyped-def]
            audio, used = super().vocode(prosody, start, stop, phase=phase, stats=stats)
            return np.full_like(audio, 0.1 * len(self.calls)), used  # each window a level of its own

    durations = (1, *([3] * 300), 2)
    segment = spoken("a" * 300, (0, 300))
    double = LevelPerWindowDouble(durations)
    pieces = list(render(double, segment, voice="v", speed=1.0, stats_model=stats_model(), growth=1.5))
    joined = np.concatenate([p.audio for p in pieces])
    assert len(double.calls) > 2 and joined[-1] - joined[0] == pytest.approx(0.1 * (len(double.calls) - 1))
    # No jump anywhere: each change of level is a raised-cosine ramp over the cross-fade.
    assert np.abs(np.diff(joined)).max() < 2 * 0.1 / CROSSFADE_SAMPLES


def test_a_window_that_overflows_with_predicted_statistics_is_never_sent() -> None:
    """Statistics that fail a segment make noise (a listener heard "Yes." as full-scale noise): the
    window that overflows is dropped and the rest of the segment comes from one call with its own
    statistics, joined where that window would have begun."""

    class OverflowingDouble(SineVocoderDouble):
        def vocode(self, prosody, start, stop, *, phase, stats):  # type: ignore[no-untyped-def]
            audio, used = super().vocode(prosody, start, stop, phase=phase, stats=stats)
            if stats is not None and len(self.calls) == 2:  # the second window
                audio = np.full_like(audio, 3.4e38)
                audio[::7] = np.nan
            return audio, used

    text = "abcdefghij " * 40
    segment = spoken(text.strip(), (0, len(text.strip())))
    durations = (1, *(3 if c != " " else 1 for c in text.strip()), 2)
    (whole,) = render(
        SineVocoderDouble(durations), segment, voice="v", speed=1.0, stats_model=None, growth=1.5
    )
    double = OverflowingDouble(durations)
    pieces = list(render(double, segment, voice="v", speed=1.0, stats_model=stats_model(), growth=1.5))
    assert [p.last for p in pieces] == [False, True]  # the first window, then the rest in one piece
    assert [used for _, _, used in double.calls] == [True, True, False]  # the third call: whole, own stats
    joined = np.concatenate([p.audio for p in pieces])
    assert np.isfinite(joined).all() and np.abs(joined).max() <= 0.5
    np.testing.assert_allclose(joined, whole.audio, atol=1e-5)  # nothing lost, nothing twice


def test_the_statistics_model_never_extrapolates_past_its_calibration() -> None:
    """A linear fit asked far from its data predicts a variance below zero (floored at almost nothing,
    the vocoder overflowed): shares are clamped into the calibration's ranges, and every variance is at
    least the smallest that channel had there."""
    rng = np.random.default_rng(5)
    samples = []
    for silence, sibilance in ((0.1, 0.05), (0.3, 0.1), (0.5, 0.2)):
        mean = rng.normal(size=(1, 8, 1))
        variance = rng.uniform(0.5, 2.0, size=(1, 8, 1))
        stats = NormStats((mean.astype(np.float32),), (variance.astype(np.float32),), 300)
        samples.append(Sample(stats, silence, sibilance))
    model = NormStatsModel.fit(samples)
    floor = np.min([s.stats.variances[0] for s in samples], axis=0)
    for silence, sibilance in ((0.0, 0.0), (0.03, 0.5), (0.9, 0.0), (0.51, 0.24), (0.2, 0.1)):
        predicted = model.at(silence, 100, sibilance)
        assert (predicted.variances[0] >= floor - 1e-6).all(), (silence, sibilance)
    clamped = model.at(0.03, 100, 0.0)  # below the calibration's silence and sibilant ranges
    at_edge = model.at(0.1, 100, 0.05)
    np.testing.assert_allclose(clamped.means[0], at_edge.means[0], atol=1e-6)


def test_own_region_cuts_at_the_onsets_the_durations_give() -> None:
    text = "aa bb cc dd"
    # tokens: pad, a a ␣ b b ␣ c c ␣ d d, pad: every letter 2 frames, spaces 1, pads 4
    durations = (4, 2, 2, 1, 2, 2, 1, 2, 2, 1, 2, 2, 4)
    known = frozenset("abcd ")
    middle = spoken(text, (3, 8), before=True, ending="continues")  # own words "bb cc"
    region = own_region(middle, durations, known)
    assert region is not None
    b_onset = (4 + 2 + 2 + 1) * FRAME_SAMPLES
    d_onset = (4 + 2 + 2 + 1 + 2 + 2 + 1 + 2 + 2 + 1) * FRAME_SAMPLES
    assert region.begin == b_onset - ONSET_LEAD_SAMPLES  # starts at its first word's onset
    assert region.end == d_onset - ONSET_LEAD_SAMPLES  # ends where the next word begins
    assert [w.text for w in region.words] == ["bb", "cc"]
    whole = spoken(text, (0, len(text)))
    full = own_region(whole, durations, known)
    # never in the utterance's first step, where a vocoder call rings
    assert full is not None and full.begin == max(
        EDGE_STEPS * STEP_SAMPLES, 4 * FRAME_SAMPLES - DECODE_LEAD_SAMPLES
    )


@dataclass
class RingingVocoderDouble(SineVocoderDouble):
    """A test double whose every call rings at its first samples, as Kokoro's vocoder does (a spike of
    3.0 at the call's tenth sample), over speech that starts after the leading pad."""

    def vocode(
        self, prosody: Prosody, start: int, stop: int, *, phase: Pitch, stats: NormStats | None
    ) -> tuple[np.ndarray, NormStats | None]:
        audio, stats = super().vocode(prosody, start, stop, phase=phase, stats=stats)
        audio[: 4 * FRAME_SAMPLES - start * STEP_SAMPLES] = 0.0  # the pad's silence
        audio[9] = 3.0
        return audio, stats


@pytest.mark.parametrize("growth", [None, 1.5])
def test_no_vocoder_call_rings_into_the_audio_and_the_lead_is_trimmed(growth: float | None) -> None:
    """The ringing would be sent (or fail the window check and render the segment whole), and it would
    keep the joiner's lead trim from finding the first sound: every call starts a step early."""
    text = "abcdefghij " * 12
    segment = spoken(text.strip(), (0, len(text.strip())))
    durations = (4, *(3 if c != " " else 1 for c in text.strip()), 2)
    double = RingingVocoderDouble(durations)
    model = stats_model() if growth else None
    pieces = list(render(double, segment, voice="v", speed=1.0, stats_model=model, growth=growth))
    audio = np.concatenate([p.audio for p in pieces])
    assert np.abs(audio).max() <= 0.5 + 1e-6  # the sine's own peak: no ringing passed on
    if growth:
        assert len(pieces) > 1 and all(with_stats for _, _, with_stats in double.calls)  # none fell back
    joiner = SegmentJoiner(24_000)
    pcm = b"".join(joiner.segment(p) for p in pieces) + joiner.finish()
    samples = np.frombuffer(pcm, dtype="<i2")
    first_sound = int(np.flatnonzero(np.abs(samples) > 0.005 * 32767)[0])
    assert first_sound <= round(KEEP_LEAD_S * 24_000) + SOUND_FRAME_SAMPLES  # the kept lead (in frames)


def test_a_segment_with_nothing_to_say_renders_nothing() -> None:
    segment = spoken("...", (0, 3))
    double = SineVocoderDouble((1, 1, 1, 1, 1))
    assert list(render(double, segment, voice="v", speed=1.0, stats_model=None, growth=None)) == []
    assert double.calls == []  # no vocoder work for it either


def test_the_statistics_model_recovers_the_sibilant_component_too() -> None:
    """A sentence full of /s/ has other statistics than its silence share says (its windows came out
    up to 9 dB brighter above 5 kHz): a third component, weighted by the sibilant share, is recovered."""
    rng = np.random.default_rng(11)
    parts = [rng.normal(size=(1, 8, 1)) for _ in range(3)]  # speech, silence, sibilants
    squares = [part**2 + spread for part, spread in zip(parts, (2.0, 0.1, 4.0), strict=True)]
    samples = []
    for silence, sibilance in ((0.1, 0.05), (0.2, 0.15), (0.35, 0.02), (0.5, 0.1), (0.15, 0.3)):
        weights = (1 - silence - sibilance, silence, sibilance)
        mean = sum(w * p for w, p in zip(weights, parts, strict=True))
        square = sum(w * q for w, q in zip(weights, squares, strict=True))
        stats = NormStats((mean.astype(np.float32),), ((square - mean**2).astype(np.float32),), 300)
        samples.append(Sample(stats, silence, sibilance))
    model = NormStatsModel.fit(samples)
    np.testing.assert_allclose(model.sibilant_means[0], parts[2], atol=2e-2)
    predicted = model.at(0.2, 100, sibilance=0.25)
    expected = 0.55 * parts[0] + 0.2 * parts[1] + 0.25 * parts[2]
    np.testing.assert_allclose(predicted.means[0], expected, atol=2e-3)


def test_the_statistics_model_recovers_a_speech_and_silence_mixture(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    speech_mean, silence_mean = rng.normal(size=(1, 8, 1)), rng.normal(size=(1, 8, 1))
    speech_sq, silence_sq = speech_mean**2 + 2.0, silence_mean**2 + 0.1
    samples = []
    for silence in (0.1, 0.2, 0.35, 0.5):
        mean = (1 - silence) * speech_mean + silence * silence_mean
        square = (1 - silence) * speech_sq + silence * silence_sq
        stats = NormStats((mean.astype(np.float32),), ((square - mean**2).astype(np.float32),), 300)
        samples.append(Sample(stats, silence))
    model = NormStatsModel.fit(samples)
    np.testing.assert_allclose(model.speech_means[0], speech_mean, atol=1e-3)
    np.testing.assert_allclose(model.silence_means[0], silence_mean, atol=1e-2)
    predicted = model.at(0.25, 100)
    expected_mean = 0.75 * speech_mean + 0.25 * silence_mean
    np.testing.assert_allclose(predicted.means[0], expected_mean, atol=1e-3)
    assert (predicted.variances[0] > 0).all() and model.at(7.0, 1).means[0].shape == (1, 8, 1)
    # kept on disk for the next process, and refused for a vocoder with another number of norms
    store = VoiceNormStats(tmp_path, layers=1)
    store.store("af_heart", samples)
    again = VoiceNormStats(tmp_path, layers=1).get("af_heart")
    assert again is not None
    np.testing.assert_allclose(again.silence_squares[0], model.silence_squares[0])
    np.testing.assert_allclose(again.variance_floors[0], model.variance_floors[0])
    np.testing.assert_allclose(again.share_bounds[0], [0.1, 0.5, 0.0, 0.0])
    assert VoiceNormStats(tmp_path, layers=2).get("af_heart") is None
    assert VoiceNormStats(tmp_path, layers=1).get("bf_emma") is None


def test_pieces_are_segments_the_joiner_takes_edge_by_edge() -> None:
    """A bare segment is its own first and last piece (what engines without windows yield)."""
    piece = Segment(np.zeros(10, np.float32))
    assert piece.first and piece.last and piece.lead == "trim" and piece.ending == "sentence"
