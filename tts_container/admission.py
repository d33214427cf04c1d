"""Admission: a new answer is served only while the engine can keep every listener playing.

Capacity is measured, not configured: :class:`Capacity` keeps a running ratio of the audio the engine
made to the engine time it took (seconds of audio per second, per engine and machine, from every call it
runs, the warm-up's first). Each listener inside an answer plays one second of audio per second, so
the server serves at most ``capacity x UTILIZATION`` listeners at once. A request that starts a new answer
(:meth:`~tts_container.listener.ListenerClock.in_answer` is false) beyond that is refused at once with
the retryable ``overloaded`` and a ``retry_after_ms``; a request inside an answer already admitted is
never refused for capacity (its listener would hear the answer stop mid-way). One listener is always
admitted, however slow the engine: speech late is better than none.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from strands_kokoro.protocol import ErrorCode, ServerError
from tts_container.listener import ANSWER_GAP_S, Clock, Heard, ListenerClock

# The share of the measured capacity the server promises: the rest absorbs first windows (their
# prosody costs more per second of audio than the windows after), measurement noise and the
# network's jitter.
UTILIZATION = 0.9
# Engine time over which the capacity estimate forgets: long enough to average several answers,
# short enough to follow a machine that slows down (a noisy neighbour, thermal limits).
HORIZON_S = 30.0
RETRY_AFTER_MIN_S = 0.25
RETRY_AFTER_MAX_S = 10.0


@dataclass(slots=True)
class Capacity:
    """Seconds of audio the engine renders per second of its own time, decayed over :data:`HORIZON_S`."""

    audio_s: float = 0.0
    engine_s: float = 0.0

    def record(self, audio_s: float, engine_s: float) -> None:
        """One engine call made ``audio_s`` of audio in ``engine_s``."""
        keep = math.exp(-engine_s / HORIZON_S)
        self.audio_s = self.audio_s * keep + audio_s
        self.engine_s = self.engine_s * keep + engine_s

    @property
    def audio_per_s(self) -> float | None:
        return self.audio_s / self.engine_s if self.engine_s > 0 else None

    def listeners(self) -> int:
        """How many listeners the engine keeps playing at once (at least one)."""
        rate = self.audio_per_s
        return 1 if rate is None else max(1, math.floor(rate * UTILIZATION))


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
