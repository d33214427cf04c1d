"""Admission: a new answer is served only while the engine can keep every listener playing.

The engine's measured :class:`~tts_container.scheduling.capacity.Capacity` says how many listeners it
keeps playing; a request that starts a new answer past that is refused ``overloaded`` with
``retry_after_ms``, one inside an admitted answer never, and one listener always is.
Every route enters a request through :func:`enter`, so a request bad in two ways gets the same code on
every route: parse, voice and language, the text (:mod:`tts_container.text.speakable`), the audio format,
the route's own room, then capacity (docs/operating.md, "Many listeners").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from strands_kokoro.audio_encoding import EncodedFormat, FormatUnavailable, encoder_available
from strands_kokoro.protocol import AudioFormatName, ErrorCode, ServerError, SynthesizeRequest
from tts_container.scheduling.capacity import Capacity
from tts_container.scheduling.listener import ANSWER_GAP_S, Clock, Heard, ListenerClock
from tts_container.text.g2p import dialect_for
from tts_container.text.speakable import screen

if TYPE_CHECKING:
    from tts_container.synthesis.synthesizer import Synthesizer

RETRY_AFTER_MIN_S = 0.25
RETRY_AFTER_MAX_S = 10.0


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
