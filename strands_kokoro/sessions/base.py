"""One async interface for every way of reaching a Kokoro server (WebSocket, SageMaker bidi, POST, ...).

``KokoroSpeech`` talks only to :class:`SpeechSession`; the endpoint string picks the implementation
(``open_session``). Every implementation turns its transport's frames into the same
:data:`SessionEvent` values (the protocol's own server messages), in wire order, so reconnects, ordering
and metrics are written once. The pieces every transport shares live here: :class:`FrameDecoder` (which
request an audio frame belongs to), :class:`DrainTracker` (close only once the audio is read), and
:class:`OneRequestAtATimeSession`, the base of the transports that make one call per request.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Protocol, Self

from strands_kokoro.errors import CodedError, TurnErrorCode
from strands_kokoro.protocol import (
    AudioData,
    Cancelled,
    ControlFrame,
    ServerError,
    SessionStarted,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    WordTimings,
    control_object,
    parse_control,
)

SessionEvent = (
    SessionStarted | SynthesisStarted | AudioData | WordTimings | SynthesisCompleted | ServerError | Cancelled
)


class SessionClosedError(CodedError, ConnectionError):
    """The transport dropped (or could not be opened); the caller may reopen and re-send.

    ``code`` says why (``connection_lost`` unless a transport knows better) and ``retryable`` whether
    reopening can help (a transport whose credentials are missing says it cannot).
    """

    retryable = True

    def __init__(
        self, message: str = "the connection dropped", *, code: str = TurnErrorCode.CONNECTION_LOST
    ) -> None:
        super().__init__(code, message)


class SpeechSession(Protocol):
    """A persistent (or per-request, for batch transports) conversation with one Kokoro server.

    Use as ``async with session: ...``. ``send`` never waits for audio; ``events`` yields what the server
    sends, in order, until the session is closed, and raises :class:`SessionClosedError` if the
    transport drops. ``close`` sends the protocol's ``close`` only after the caller drained the audio it
    wants (SageMaker: closing the input stream early loses audio).
    """

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    async def send(self, request: SynthesizeRequest) -> None: ...

    async def cancel(self) -> None: ...

    def events(self) -> AsyncIterator[SessionEvent]: ...

    async def close(self) -> None: ...


class FrameDecoder:
    """Server frames of one bidirectional session → events; remembers which request audio belongs to.

    Audio that arrives outside any request (a server bug, or the tail of a cancelled request) is dropped
    rather than credited to the wrong sentence. Control frames of unknown ``type`` are ignored.
    """

    def __init__(self) -> None:
        self.current_request_id: str | None = None

    def decode(self, payload: bytes | str) -> SessionEvent | None:
        """A frame classified by content (architecture §3): a whole JSON object is control, else audio."""
        obj = control_object(payload)
        if obj is None:
            return None if isinstance(payload, str) else self.audio(payload)
        frame = parse_control(obj)
        return None if frame is None else self.control(frame)

    def audio(self, pcm: bytes) -> AudioData | None:
        """A frame known to be audio (a WebSocket binary frame is not: its content decides)."""
        return AudioData(self.current_request_id, pcm) if self.current_request_id and pcm else None

    def control(self, frame: ControlFrame) -> ControlFrame:
        match frame:
            case SynthesisStarted(request_id=request_id):
                self.current_request_id = request_id
            case SynthesisCompleted(request_id=request_id) | ServerError(request_id=request_id):
                if request_id is not None and request_id == self.current_request_id:
                    self.current_request_id = None
            case Cancelled():
                self.current_request_id = None
        return frame


class DrainTracker:
    """Which sent requests still owe audio, and whether anyone is reading it.

    A session's ``close`` must not end the stream while a reader still waits for audio (SageMaker drops
    what is in flight once the input stream closes), and must not wait for audio that nobody reads.
    """

    def __init__(self) -> None:
        self._pending: set[str] = set()
        self._drained = asyncio.Event()
        self._drained.set()
        self.consuming = False

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def sent(self, request_id: str) -> None:
        self._pending.add(request_id)
        self._drained.clear()

    def settle(self, event: SessionEvent) -> None:
        """Note a completed, failed or cancelled request."""
        match event:
            case SynthesisCompleted(request_id=request_id) | ServerError(request_id=str(request_id)):
                self._pending.discard(request_id)
            case Cancelled():
                self._pending.clear()
            case _:
                return
        if not self._pending:
            self._drained.set()

    def stop_consuming(self) -> None:
        """The reader left: nobody is owed audio any more."""
        self.consuming = False
        self._drained.set()

    async def wait_drained(self, timeout_s: float) -> None:
        """Wait (bounded) until every sent request settled, if a reader is attached."""
        if self._pending:
            await asyncio.sleep(0)  # let a consumer task that is already scheduled attach first
        if self._pending and self.consuming:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained.wait(), timeout_s)


@dataclass(frozen=True, slots=True)
class _CancelMarker:
    """Queued by ``cancel``: everything queued before it is already gone; report how much."""

    dropped: int


class OneRequestAtATimeSession(ABC):
    """The transports that make one call per request (POST /invocations, SageMaker response streaming).

    ``send`` only queues; the :meth:`events` consumer makes the calls one after another, in the order
    sent (the protocol's ordering rule), inside its own loop: no background task exists that could
    outlive the session. ``cancel`` drops the queue and stops the call in flight at its next chunk, as
    the WebSocket route does. Subclasses implement :meth:`_invoke`, set ``_open`` when their transport
    is ready and extend :meth:`_release`; :meth:`_cancelled_since` tells a call in flight to stop early.
    """

    def __init__(self, *, drain_timeout_s: float = 30.0) -> None:
        self._queue: asyncio.Queue[SynthesizeRequest | _CancelMarker | None] = asyncio.Queue()
        self._drain = DrainTracker()
        self._drain_timeout_s = drain_timeout_s
        self._generation = 0  # bumped by every cancel
        self._current: SynthesizeRequest | None = None
        self._current_generation = 0  # the generation the request in flight was started in
        self._open = False
        self._closing = False

    @abstractmethod
    def _invoke(self, request: SynthesizeRequest) -> AsyncGenerator[SessionEvent, None]:
        """One call: the request's start, audio and completion (or a ServerError)."""

    def _not_open(self) -> SessionClosedError:
        return SessionClosedError("the session is not open (use `async with session:`)")

    def _cancelled_since(self, generation: int) -> bool:
        return generation != self._generation

    async def send(self, request: SynthesizeRequest) -> None:
        if self._closing or not self._open:
            raise self._not_open()
        if request.request_id is not None:
            self._drain.sent(request.request_id)
        self._queue.put_nowait(request)

    async def cancel(self) -> None:
        """Drop every queued request and stop the one in flight; the consumer then sees ``Cancelled``.

        Every cancel gets its own ``Cancelled``, in order, as on the WebSocket route (an earlier cancel
        not yet reported keeps its own answer and what it dropped).
        """
        dropped = 0
        earlier: list[_CancelMarker] = []
        closing = False
        while not self._queue.empty():
            match self._queue.get_nowait():
                case SynthesizeRequest():
                    dropped += 1
                case _CancelMarker() as marker:
                    earlier.append(marker)
                case None:
                    closing = True
        dropped += self._current is not None and self._current_generation == self._generation
        self._generation += 1
        for marker in [*earlier, _CancelMarker(dropped)]:
            self._queue.put_nowait(marker)
        if closing:
            self._queue.put_nowait(None)

    async def events(self) -> AsyncIterator[SessionEvent]:
        """Yield each request's events in order until :meth:`close`."""
        self._drain.consuming = True
        try:
            while (item := await self._queue.get()) is not None:
                if isinstance(item, _CancelMarker):
                    cancelled = Cancelled(item.dropped)
                    self._drain.settle(cancelled)
                    yield cancelled
                    continue
                self._current = item
                generation = self._current_generation = self._generation
                try:
                    # aclosing: a call left early (a cancel, or this generator closed) releases its
                    # transport here, not in a GC finalizer task that outlives the session.
                    async with contextlib.aclosing(self._invoke(item)) as call:
                        async for event in call:
                            if self._cancelled_since(generation):
                                break
                            self._drain.settle(event)
                            yield event
                finally:
                    self._current = None
        finally:
            self._drain.stop_consuming()

    async def close(self) -> None:
        """Let the consumer finish the requests already sent, then release the transport; idempotent.

        Only a consumer of :meth:`events` drains requests; with none attached nobody wants the audio, so
        close does not wait (as in the bidirectional sessions).
        """
        await self._close(drain=True)

    async def _close(self, *, drain: bool) -> None:
        if self._closing or not self._open:
            return
        self._closing = True
        if drain:
            await self._drain.wait_drained(self._drain_timeout_s)
        if self._drain.pending:
            await self.cancel()
        self._queue.put_nowait(None)
        await self._release()

    async def _release(self) -> None:
        """Free the transport once the session is closed (subclasses add what they hold)."""
        self._open = False

    async def __aexit__(self, *exc_info: object) -> None:
        await self._close(drain=exc_info[0] is None)
