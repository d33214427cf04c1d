"""Admission: a new answer is served only while the engine can keep every listener playing.

:class:`Capacity` is measured, not configured: the audio the engine made over its engine time (each
call's :class:`~tts_container.scheduling.inference.CallShare`), taken with the engine full on an engine
with lanes. A listener inside an answer needs :func:`listener_share` audio seconds per second, so at
most ``capacity / share`` are served; a request that starts a new answer past that is refused
``overloaded`` with ``retry_after_ms``, one inside an admitted answer never, and one listener always is.
Every route enters a request through :func:`enter`, so a request bad in two ways gets the same code on
every route: parse, voice and language, the text (:mod:`tts_container.text.speakable`), the audio format,
the route's own room, then capacity (docs/operating.md, "Many listeners").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from strands_kokoro.audio_encoding import EncodedFormat, FormatUnavailable, encoder_available
from strands_kokoro.protocol import AudioFormatName, ErrorCode, ServerError, SynthesizeRequest
from tts_container.engines.windowed_engine import WINDOW_GROWTH
from tts_container.scheduling.listener import ANSWER_GAP_S, Clock, Heard, ListenerClock
from tts_container.text.g2p import dialect_for
from tts_container.text.speakable import screen

if TYPE_CHECKING:
    from tts_container.synthesis.synthesizer import Synthesizer

# A listener's share of the engine when segments are rendered whole: the next is rendered while one
# plays (1.0), and a tenth more absorbs measurement noise and the network's jitter.
WHOLE_SEGMENT_SHARE = 1.1
# Engine time over which the capacity estimate forgets: long enough to average several answers,
# short enough to follow a machine that slows down (a noisy neighbour, thermal limits).
HORIZON_S = 30.0
RETRY_AFTER_MIN_S = 0.25
RETRY_AFTER_MAX_S = 10.0


def full_at(lanes: int) -> int:
    """Calls running at once that count as an engine with ``lanes`` full: both lanes of a two-lane
    engine, half the batch of one that batches more (admission decides when the engine is near full;
    fewer calls in a pass would make the estimate follow a lightly loaded engine's throughput, which
    grows with the batch and so would refuse the listeners a fuller batch serves)."""
    return max(2, lanes // 2)


def listener_share(renders_in_windows: bool) -> float:
    """Seconds of audio per second one listener needs from the engine for none to stall.

    Rendered in windows, a listener needs more than real time: each window is :data:`WINDOW_GROWTH`
    times the one before and must be ready before that one has played. The admission takes
    :data:`WINDOW_GROWTH`, a margin over the share below which a listener stutters, for a machine
    noisier than the one measured (docs/benchmarks.md, "What a listener needs of the engine").
    """
    return WINDOW_GROWTH if renders_in_windows else WHOLE_SEGMENT_SHARE


@dataclass(slots=True)
class _Ratio:
    """Audio seconds over engine seconds, both decayed over :data:`HORIZON_S` of engine time."""

    audio_s: float = 0.0
    engine_s: float = 0.0

    def record(self, audio_s: float, engine_s: float) -> None:
        keep = math.exp(-engine_s / HORIZON_S)
        self.audio_s = self.audio_s * keep + audio_s
        self.engine_s = self.engine_s * keep + engine_s

    @property
    def value(self) -> float | None:
        return self.audio_s / self.engine_s if self.engine_s > 0 and self.audio_s > 0 else None


@dataclass(slots=True)
class Capacity:
    """Seconds of audio the engine renders per second of its own time, and what one listener needs of
    it (``share``).

    Calls alone and calls side by side are measured apart: on a CPU a call alone on every core makes
    less audio per core than two calls on half the cores each, and several listeners are served side by
    side. The side-by-side ratio is followed between its measurements by the calls alone (a machine
    that slows down, or speeds up again, while one listener at a time is served shows there first):
    without that, an estimate too low to admit a second listener could never be measured again.
    """

    share: float = WHOLE_SEGMENT_SHARE
    # Calls running at once that count as the engine full (:func:`full_at`): 2 on a two-lane engine.
    full: int = 2
    alone: _Ratio = field(default_factory=_Ratio)
    side_by_side: _Ratio = field(default_factory=_Ratio)
    _alone_then: float | None = None  # the ratio alone when the side-by-side one was last measured

    def record(self, audio_s: float, engine_s: float, lanes: int = 1, peak: int | None = None) -> None:
        """One engine call made ``audio_s`` of audio in ``engine_s`` (its share of the engine), given
        ``lanes`` (1: the engine to itself) with at most ``peak`` calls running meanwhile (default
        ``lanes``).

        A call given a share that too few calls took (a lane beside nobody, a batch of two on an engine
        that batches 32) measures neither the engine alone nor the engine full: it is left out.
        """
        if lanes == 1:
            self.alone.record(audio_s, engine_s)
        elif (lanes if peak is None else peak) >= self.full:
            self.side_by_side.record(audio_s, engine_s)
            self._alone_then = self.alone.value

    @property
    def audio_per_s(self) -> float | None:
        """What the engine makes when it serves several listeners: the side-by-side ratio, moved as the
        ratio alone moved since (the ratio alone on an engine that never runs calls side by side)."""
        alone, shared = self.alone.value, self.side_by_side.value
        if shared is None:
            return alone
        if alone is None or self._alone_then is None:
            return shared
        return shared * alone / self._alone_then

    def listeners(self) -> int:
        """How many listeners the engine keeps playing at once (at least one)."""
        rate = self.audio_per_s
        # (a hair added: 3.3 / 1.1 is 2.9999999999999996 in floating point)
        return 1 if rate is None else max(1, math.floor(rate / self.share + 1e-9))


@dataclass(slots=True)
class Admission:
    """The listeners a server is serving, and whether one more answer fits."""

    capacity: Capacity
    clock: Clock = time.perf_counter
    listeners: set[ListenerClock] = field(default_factory=set)
    admitted: int = 0
    refused: int = 0

    report: Callable[[Heard], None] | None = None
    limit: int | None = None  # the operator's fixed number of listeners, instead of the measured one

    def limit_now(self) -> int:
        """How many listeners inside an answer are admitted at once now."""
        return self.capacity.listeners() if self.limit is None else self.limit

    def listener(self) -> ListenerClock:
        """A new listener (a session or a POST), counted until :meth:`leave`."""
        listener = ListenerClock(self.clock, self.report)
        self.listeners.add(listener)
        return listener

    def leave(self, listener: ListenerClock) -> None:
        self.listeners.discard(listener)

    def speaking(self) -> int:
        """Listeners inside an answer now."""
        return sum(listener.in_answer() for listener in self.listeners)

    def admit(self, listener: ListenerClock, request: object, request_id: str | None) -> ServerError | None:
        """Add ``request`` to ``listener``'s open requests and return None, or return the ``overloaded``
        answer (it starts a new answer that does not fit). Its owner removes it when it ends."""
        if not listener.in_answer():
            if self.speaking() + 1 > self.limit_now():
                return self._refuse(request_id)
            self.admitted += 1
        listener.requests.add(request)
        return None

    def _refuse(self, request_id: str | None) -> ServerError:
        self.refused += 1
        retry_after_ms = round(self.retry_after_s() * 1000)
        message = (
            f"the server is serving all the listeners it can ({self.limit_now()}); "
            f"retry in {retry_after_ms} ms or on another instance"
        )
        return ServerError(request_id, ErrorCode.OVERLOADED, message, retry_after_ms)

    def retry_after_s(self) -> float:
        """When a place is likely to free: the soonest a speaking listener's audio runs out and its
        answer's gap passes (requests still coming extend it; the client retries within a budget)."""
        now = self.clock()
        ends = [
            listener.dry_at + ANSWER_GAP_S - now
            for listener in self.listeners
            if listener.in_answer() and listener.dry_at is not None
        ]
        soonest = min(ends, default=RETRY_AFTER_MIN_S)
        return min(RETRY_AFTER_MAX_S, max(RETRY_AFTER_MIN_S, soonest))


AudioFormat = AudioFormatName | EncodedFormat


def admit(synthesizer: Synthesizer, request: SynthesizeRequest) -> SynthesizeRequest | ServerError:
    """Everything checked before a request is queued: voice and language, then :func:`screen`."""
    refusal = synthesizer.refusal(request)
    if refusal is not None:
        return refusal
    return screen(request, dialect_for(request.lang, request.voice))


def checked(
    synthesizer: Synthesizer, request: SynthesizeRequest, audio_format: AudioFormat
) -> SynthesizeRequest | ServerError:
    """Steps 2 and 3: the request as the engine will speak it, or why it cannot be spoken at all."""
    spoken = admit(synthesizer, request)
    if isinstance(spoken, ServerError):
        return spoken
    if not encoder_available(audio_format):
        unavailable = FormatUnavailable(audio_format)
        return ServerError(request.request_id, ErrorCode.FORMAT_UNAVAILABLE, unavailable.message)
    return spoken


def enter[T](
    synthesizer: Synthesizer,
    admission: Admission,
    listener: ListenerClock,
    request: SynthesizeRequest,
    *,
    audio_format: AudioFormat,
    entry: Callable[[SynthesizeRequest], T],
    room: Callable[[SynthesizeRequest], ServerError | None] | None = None,
) -> T | ServerError:
    """Steps 2 to 5 for a parsed ``request`` of ``listener``: its entry, now one of the listener's open
    requests (made by ``entry`` from the checked request), or the first refusal.

    ``audio_format``: the format the route sends the audio in. ``room``: the route's own limit, if any.
    """
    spoken = checked(synthesizer, request, audio_format)
    if isinstance(spoken, ServerError):
        return spoken
    if room is not None and (full := room(request)) is not None:
        return full
    item = entry(spoken)
    if (refused := admission.admit(listener, item, request.request_id)) is not None:
        return refused
    return item
