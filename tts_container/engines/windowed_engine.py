"""The engines' common front: plan a request now, render it lazily through :mod:`windows`, and decide
once at warm-up whether windows pay on this machine (and fit the voice statistics they need).

Split from :mod:`tts_container.engines.windows`, which holds the window arithmetic itself (pure
functions of a segment's durations and pitch); this module holds what touches an engine's speed and a
voice's calibration.
"""

from __future__ import annotations

import functools
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Container, Iterator

import numpy as np

from strands_kokoro.protocol import DEFAULT_LANG, is_voice_mix, voice_names
from tts_container.engines.base import (
    NATIVE_SAMPLE_RATE,
    NO_CONTEXT,
    Audio,
    Context,
    Segment,
    VoiceCalibration,
)
from tts_container.engines.norm_stats import NormStats, Sample, VoiceNormStats, calibration_for, shares
from tts_container.engines.voices import UnknownVoice, VoiceTables
from tts_container.engines.windows import HARMONICS, STEP_SAMPLES, Pitch, Prosody, Vocoder, render
from tts_container.synthesis.utterance import SpokenSegment, plan_utterance
from tts_container.text.g2p import Phonemizer

# Faster than this (vocoder seconds per second of audio) a whole segment is ready sooner than a first
# window's audio would play: windows would only add joins. A GPU is ~0.02; two CPU cores ~0.3.
WINDOWED_ABOVE_RTF = 0.1
# Each window of a segment this much larger than the one before: every window is then rendered before
# the audio before it has played on an engine up to RTF ~0.5 (a loaded 2-core CPU).
WINDOW_GROWTH = 1.5
SPEED_PROBE_TEXT = "The model is warm and ready to speak."

logger = logging.getLogger(__name__)


def speak(
    vocoder: Vocoder,
    phonemizer: Phonemizer,
    stats: VoiceNormStats,
    text: str,
    *,
    voice: str,
    speed: float,
    lang: str,
    context: Context,
    growth: float | None,
) -> Iterator[Segment]:
    """An engine's ``segments``: plan ``text`` now (a bad request fails at the call, which the server
    makes from its pool), and return an iterator that renders it lazily, piece by piece (so a
    ``cancel`` lands between pieces)."""
    plan = plan_utterance(
        phonemizer,
        text,
        voice=voice,
        lang=lang,
        previous_text=context.previous_text,
        next_text=context.next_text,
    )
    model = stats.get(voice) if growth is not None else None
    return (
        piece
        for segment in plan
        for piece in render(vocoder, segment, voice=voice, speed=speed, stats_model=model, growth=growth)
    )


class WindowedEngine(ABC):
    """What both engines share: the voice check, and planning a request now and rendering it lazily
    through :func:`speak`. A subclass supplies the model (:class:`Vocoder`'s three members) and sets
    ``_voice_tables``, ``_phonemizer``, ``_stats`` and ``growth`` (None until ``warm_up`` chose)."""

    _voice_tables: VoiceTables
    _phonemizer: Phonemizer
    _stats: VoiceNormStats
    growth: float | None

    @property
    @abstractmethod
    def vocab(self) -> Container[str]: ...

    @abstractmethod
    def prosody(
        self, phonemes: str, *, voice: str, speed: float, style_tokens: int | None = None
    ) -> Prosody: ...

    @abstractmethod
    def vocode(
        self, prosody: Prosody, start: int, stop: int, *, phase: Pitch, stats: NormStats | None
    ) -> tuple[Audio, NormStats | None]: ...

    @property
    def voices(self) -> frozenset[str]:
        return self._voice_tables.names

    @property
    def renders_in_windows(self) -> bool:
        return self.growth is not None

    def segments(
        self,
        text: str,
        *,
        voice: str,
        speed: float,
        lang: str,
        context: Context = NO_CONTEXT,
    ) -> Iterator[Segment]:
        """Check the voice and plan now (a bad request fails at the call, which the server makes from
        its pool); the returned iterator renders lazily, piece by piece, so a ``cancel`` lands between."""
        if not self._voice_tables.knows(voice):
            raise UnknownVoice(f"unknown voice {voice!r}")
        return speak(
            self,
            self._phonemizer,
            self._stats,
            text,
            voice=voice,
            speed=speed,
            lang=lang,
            context=context,
            growth=self.growth,
        )

    def calibration(self, voice: str) -> VoiceCalibration | None:
        """What readies ``voice`` to stream, when this engine renders in windows and ``voice`` has no
        statistics yet (warm-up fits the default voice's; the server fits the others in its idle time:
        :mod:`tts_container.engines.voice_calibration`)."""
        if self.growth is None or not self._voice_tables.knows(voice):
            return None
        return voice_calibration(self, self._phonemizer, self._stats, voice)


def choose_growth(
    vocoder: Vocoder, phonemizer: Phonemizer, stats: VoiceNormStats, voice: str
) -> float | None:
    """At warm-up: time the vocoder on one sentence; if it is slow enough that windows pay, fit (or
    load) ``voice``'s statistics model and return :data:`WINDOW_GROWTH`, else None (whole segments).

    Decided once per process, so a server renders a given request the same way for its whole life.
    """
    (probe,) = plan_utterance(phonemizer, SPEED_PROBE_TEXT, voice=voice, lang=DEFAULT_LANG)
    prosody = vocoder.prosody(probe.phonemes.text, voice=voice, speed=1.0)
    started = time.perf_counter()
    vocoder.vocode(prosody, 0, prosody.steps, phase=np.zeros(HARMONICS, np.float32), stats=None)
    rtf = (time.perf_counter() - started) / (prosody.steps * STEP_SAMPLES / NATIVE_SAMPLE_RATE)
    if rtf <= WINDOWED_ABOVE_RTF:
        logger.info("vocoder RTF %.3f: every segment rendered in one call", rtf)
        return None
    if (calibration := voice_calibration(vocoder, phonemizer, stats, voice)) is not None:
        logger.info("fitting voice %s's vocoder statistics (once per voice and model file)", voice)
        for step in calibration.steps:  # the first start with these weights: why /ping waits
            step()
        calibration.finish()
    logger.info("vocoder RTF %.2f: long segments rendered in windows (voice %s calibrated)", rtf, voice)
    return WINDOW_GROWTH


def voice_calibration(
    vocoder: Vocoder, phonemizer: Phonemizer, stats: VoiceNormStats, voice: str
) -> VoiceCalibration | None:
    """Fitting ``voice``'s statistics as one step per calibration sentence (each rendered whole), then
    the fit; None when they are known (fitted in this process, or saved by an earlier one)."""
    if stats.get(voice) is not None:
        return None
    if is_voice_mix(voice):  # derived from its voices' statistics: fit those that have none
        parts = [voice_calibration(vocoder, phonemizer, stats, name) for name in voice_names(voice)]
        needed = [part for part in parts if part is not None]
        if not needed:
            return None

        def finish_parts() -> None:
            for part in needed:
                part.finish()

        return VoiceCalibration(voice, tuple(step for part in needed for step in part.steps), finish_parts)
    samples: list[Sample] = []

    def measure(segment: SpokenSegment) -> None:
        if (sample := whole_sample(vocoder, segment, voice=voice)) is not None:
            samples.append(sample)

    def finish() -> None:
        stats.store(voice, samples)

    text, lang = calibration_for(voice)
    plan = plan_utterance(phonemizer, text, voice=voice, lang=lang)
    return VoiceCalibration(voice, tuple(functools.partial(measure, segment) for segment in plan), finish)


def whole_sample(vocoder: Vocoder, segment: SpokenSegment, *, voice: str) -> Sample | None:
    """One segment rendered in one call: the statistics it was normalized with and its silence share
    (None from an engine that cannot tell its statistics)."""
    prosody = vocoder.prosody(segment.phonemes.text, voice=voice, speed=1.0)
    zero = np.zeros(HARMONICS, dtype=np.float32)
    _, stats = vocoder.vocode(prosody, 0, prosody.steps, phase=zero, stats=None)
    if stats is None:
        return None
    return Sample(stats, *shares(prosody.durations, segment.phonemes.text, vocoder.vocab))
