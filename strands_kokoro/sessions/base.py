"""One async interface for every way of reaching a Kokoro server (WebSocket, SageMaker bidi, POST, ...).

``KokoroSpeech`` talks only to :class:`SpeechSession`; the endpoint string picks the implementation
(``open_session``). Every implementation turns its transport's frames into the same
:data:`SessionEvent` values, in wire order, so reconnects, ordering and metrics are written once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    """One text to speak; ``request_id`` is chosen by the client so audio can be matched to it."""

    request_id: str
    text: str
    voice: str | None = None
    speed: float | None = None
    sample_rate: int | None = None
    lang: str | None = None


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
