"""One async interface for every way of reaching a Kokoro server (WebSocket, SageMaker bidi, POST, ...).

``KokoroSpeech`` talks only to :class:`SpeechSession`; the endpoint string picks the implementation
(``open_session``). Every implementation turns its transport's frames into the same
:data:`SessionEvent` values, in wire order, so reconnects, ordering and metrics are written once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from strands_kokoro.protocol import synthesize_message


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    """One text to speak; ``request_id`` is chosen by the client so audio can be matched to it."""

    request_id: str
    text: str
    voice: str | None = None
    speed: float | None = None
    sample_rate: int | None = None
    lang: str | None = None

    def wire_message(self) -> str:
        """The protocol's ``synthesize`` frame for this request."""
        return synthesize_message(
            self.text,
            request_id=self.request_id,
            voice=self.voice,
            speed=self.speed,
            sample_rate=self.sample_rate,
            lang=self.lang,
        )


@dataclass(frozen=True, slots=True)
class SynthesisStarted:
    request_id: str
    sample_rate: int
    channels: int = 1


@dataclass(frozen=True, slots=True)
class AudioData:
    """Raw PCM s16le mono belonging to ``request_id`` (the request between start and complete)."""

    request_id: str
    pcm: bytes


@dataclass(frozen=True, slots=True)
class SynthesisCompleted:
    request_id: str
    audio_ms: float
    chunks: int
    first_audio_ms: float | None
    elapsed_ms: float


@dataclass(frozen=True, slots=True)
class ServerError:
    """An ``error`` frame: the server refused or failed one request; the session stays open."""

    request_id: str | None
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Cancelled:
    dropped: int


SessionEvent = SynthesisStarted | AudioData | SynthesisCompleted | ServerError | Cancelled


class SessionClosedError(ConnectionError):
    """The transport dropped (or could not be opened); the caller may reopen and re-send."""


class SpeechSession(Protocol):
    """A persistent (or per-request, for batch transports) conversation with one Kokoro server.

    Use as ``async with session: ...``. ``send`` never waits for audio; ``events`` yields what the server
    sends, in order, until the session is closed, and raises :class:`SessionClosedError` if the
    transport drops. ``close`` sends the protocol's ``close`` only after the caller drained the audio it
    wants (SageMaker: closing the input stream early loses audio).
    """

    async def __aenter__(self) -> SpeechSession: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    async def send(self, request: SpeechRequest) -> None: ...

    async def cancel(self) -> None: ...

    def events(self) -> AsyncIterator[SessionEvent]: ...

    async def close(self) -> None: ...


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
