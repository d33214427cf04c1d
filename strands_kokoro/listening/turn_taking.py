"""When the user speaks, interrupts and has finished: the turn-taking rules over voice-activity frames.

:class:`UtteranceCollector` reads one frame at a time (its PCM and its speech probability: voiced from
``threshold``, silence below ``threshold - 0.15``, between them the state holds) and says what happened as
:class:`Signal` values: ``speech`` (voiced after silence; nothing decided yet), ``interruption``
(``min_interruption_ms`` voiced: enough to stop an agent that is talking), ``pause`` (``transcribe_after_ms``
of silence after ``min_speech_ms`` of speech; ``audio``: so far), ``utterance`` (``end_of_turn_ms`` of
silence after at least ``min_speech_ms`` voiced: the user's turn, ``audio`` with ``pre_roll_ms`` before it),
``noise`` (the same silence after less: dropped) and ``too_long`` (``max_utterance_ms`` reached: the
utterance ends, an ``utterance`` follows). Times are ms of audio read (``at_ms``): no model, no clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from strands_kokoro.listening.options import ListeningOptions

SignalKind = Literal["speech", "interruption", "pause", "utterance", "noise", "too_long"]
SILENCE_MARGIN = 0.15


@dataclass(frozen=True, slots=True)
class Signal:
    """One turn-taking fact: ``kind``, when (ms of input audio), and for ``utterance`` and ``pause`` the
    audio and when its speech started and ended."""

    kind: SignalKind
    at_ms: float
    audio: bytes = b""
    speech_start_ms: float = 0.0
    speech_end_ms: float = 0.0


class UtteranceCollector:
    """The turn-taking state over a stream of equal frames of s16le PCM (see the module docstring)."""

    def __init__(self, options: ListeningOptions, *, frame_ms: float) -> None:
        self.options = options
        self.frame_ms = frame_ms
        self.now_ms = 0.0
        self._recent: deque[bytes] = deque(maxlen=max(0, round(options.pre_roll_ms / frame_ms)))
        self._reset()

    @property
    def in_utterance(self) -> bool:
        """Is an utterance under way (voiced frames since the last silence long enough to end one)?"""
        return self._audio is not None

    def _reset(self) -> None:
        self._audio: list[bytes] | None = None
        self._voiced_ms = 0.0
        self._silence_ms = 0.0
        self._voiced = False
        self._interrupted = False
        self._start_ms = 0.0
        self._last_voiced_end_ms = 0.0

    def feed(self, frame: bytes, probability: float) -> list[Signal]:
        """Read one frame; return what it decided (usually nothing)."""
        o = self.options
        start = self.now_ms
        self.now_ms += self.frame_ms
        if probability >= o.threshold:
            self._voiced = True
        elif probability < o.threshold - SILENCE_MARGIN:
            self._voiced = False
        signals: list[Signal] = []
        if self._audio is None:
            if not self._voiced:
                self._recent.append(frame)
                return signals
            self._audio = list(self._recent)
            self._recent.clear()
            self._start_ms = start
            signals.append(Signal("speech", start))
        self._audio.append(frame)
        if self._voiced:
            self._voiced_ms += self.frame_ms
            self._silence_ms = 0.0
            self._last_voiced_end_ms = self.now_ms
            if not self._interrupted and self._voiced_ms >= o.min_interruption_ms:
                self._interrupted = True
                signals.append(Signal("interruption", self.now_ms))
        else:
            self._silence_ms += self.frame_ms
            if (
                self._silence_ms - self.frame_ms < o.transcribe_after_ms <= self._silence_ms
                and self._voiced_ms >= o.min_speech_ms
                and o.transcribe_after_ms < o.end_of_turn_ms
            ):
                signals.append(self._pause())
        if self._silence_ms >= o.end_of_turn_ms:
            signals.append(self._end())
        elif self.now_ms - self._start_ms >= o.max_utterance_ms:
            signals.append(Signal("too_long", self.now_ms))
            signals.append(self._end())
        return signals

    def _pause(self) -> Signal:
        return Signal(
            "pause",
            self.now_ms,
            b"".join(self._audio or ()),
            speech_start_ms=self._start_ms,
            speech_end_ms=self._last_voiced_end_ms,
        )

    def _end(self) -> Signal:
        audio = b"".join(self._audio or ())
        enough = self._voiced_ms >= self.options.min_speech_ms
        signal = Signal(
            "utterance" if enough else "noise",
            self.now_ms,
            audio if enough else b"",
            speech_start_ms=self._start_ms,
            speech_end_ms=self._last_voiced_end_ms,
        )
        self._reset()
        return signal
