"""Deadlines for callers that go silent: the limits, the coded 408, the request-body and reader deadlines.

The values, and why each is what it is, are in docs/operating.md ("Deadlines"): a healthy client sends
its headers and a body (at most 64 KiB) well within ``HEADER_TIMEOUT_S`` / ``BODY_TIMEOUT_S``, both
below what a proxy in front allows, so the caller gets this coded answer and not a gateway's 504. A
``send`` waits only while the transport's buffer is over its high-water mark, so one that waits
``READER_STALL_S`` means the caller took under 48 KiB meanwhile, slower than any stream is heard:
:class:`ReaderDeadline` makes that a hang-up. WebSocket peers are pinged at SageMaker's router cadence
and dropped after ``WS_PING_TIMEOUT_S`` without a pong; one that answers is never closed for idling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING

from strands_kokoro.protocol import ErrorCode

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 20.0
KEEP_ALIVE_S = 5  # idle time between two requests on one connection (uvicorn's default, kept)
READER_STALL_S = 30.0  # a response chunk the caller's connection has not taken for this long: it is gone
WS_PING_INTERVAL_S = 60.0  # SageMaker's router pings this often
WS_PING_TIMEOUT_S = 60.0  # a pong later than this: the peer is gone
CLOSE_STALL_S = 10.0  # a closing connection whose unsent bytes have not moved for this long is reset


@dataclass(frozen=True, slots=True)
class LayerAnswer:
    """What a server's protocol layer or deadlines answer, decided once for both servers; each writes
    it in its own format (:class:`Refusal`)."""

    status: int
    code: ErrorCode
    message: str


HEADERS_TIMED_OUT = LayerAnswer(
    408, ErrorCode.REQUEST_TIMEOUT, f"the request headers did not arrive within {HEADER_TIMEOUT_S:.0f} s"
)
BODY_TIMED_OUT = LayerAnswer(
    408, ErrorCode.REQUEST_TIMEOUT, f"the request body did not arrive within {BODY_TIMEOUT_S:.0f} s"
)
NOT_HTTP = LayerAnswer(400, ErrorCode.BAD_HTTP, "the request is not valid HTTP/1.1")
HANDSHAKE_TOO_LARGE = LayerAnswer(
    431, ErrorCode.BAD_HTTP, "the WebSocket handshake's request line or a header is over 8192 bytes"
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A server's own coded answer to a stalled or malformed request (each server writes it in its own
    format)."""

    status: int
    content_type: bytes
    body: bytes

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"content-type", self.content_type),
            (b"content-length", str(len(self.body)).encode()),
            (b"connection", b"close"),  # the rest of the request may still arrive: never reuse it
        ]

    def raw(self) -> bytes:
        """The whole HTTP/1.1 response, for the protocol layer (headers never finished: no app ran)."""
        lines = [f"HTTP/1.1 {self.status} {HTTPStatus(self.status).phrase}".encode()]
        lines += [name + b": " + value for name, value in self.headers()]
        return b"\r\n".join(lines) + b"\r\n\r\n" + self.body

    async def send(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers()})
        await send({"type": "http.response.body", "body": self.body, "more_body": False})


class BodyTimedOut(Exception):
    """Raised out of ``receive`` when the body stalled; the 408 has already been sent."""


class BodyDeadline:
    """ASGI middleware: a request body must be complete ``timeout_s`` after the app first reads it.

    On expiry the caller gets ``refusal`` (408, ``connection: close``) unless the app already started
    its response, in which case the connection is just closed. The app's ``receive`` raises
    :class:`BodyTimedOut` (its own answer, should it catch that and reply, is dropped); whatever it asks
    for afterwards is ``http.disconnect``. Reads after the body is complete (waiting for a disconnect)
    have no deadline. WebSocket and lifespan scopes pass through.
    """

    def __init__(self, app: ASGIApp, *, refusal: Refusal, timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.app = app
        self.refusal = refusal
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = _BodyClock(receive, send, self.refusal, self.timeout_s)
        try:
            await self.app(scope, body.receive, body.send)
        except BodyTimedOut:
            logger.info("a request body stalled for %.0f s: answered 408", self.timeout_s)


class _BodyClock:
    """One request's body deadline: its ``receive`` and ``send`` stand in for the server's."""

    def __init__(self, receive: Receive, send: Send, refusal: Refusal, timeout_s: float) -> None:
        self._receive = receive
        self._send = send
        self._refusal = refusal
        self._timeout_s = timeout_s
        self._deadline: float | None = None
        self._complete = False
        self._started = False
        self._answered = False

    async def receive(self) -> Message:
        if self._answered:
            return {"type": "http.disconnect"}
        if self._complete:
            return await self._receive()
        loop = asyncio.get_running_loop()
        if self._deadline is None:
            self._deadline = loop.time() + self._timeout_s
        try:
            async with asyncio.timeout_at(self._deadline):
                message = await self._receive()
        except TimeoutError:
            await self._time_out()
            raise BodyTimedOut from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._complete = True
        return message

    async def send(self, message: Message) -> None:
        if self._answered:
            return  # our 408 went out; the app's own answer has nobody to go to
        if message["type"] == "http.response.start":
            self._started = True
        await self._send(message)

    async def _time_out(self) -> None:
        self._answered = True
        if self._started:
            return  # the app answered early (it never needed the body); uvicorn closes the rest
        with contextlib.suppress(OSError):  # the caller is gone too
            await self._refusal.send(self._send)


class ReaderStalled(OSError):
    """Raised out of ``send`` when the caller took none of the response for the deadline.

    An ``OSError``, as a write to a closed connection is, so the app's own handling of a client that
    went away (Starlette's ``StreamingResponse``) applies unchanged.
    """


class ReaderDeadline:
    """ASGI middleware: a caller that takes none of the response for ``timeout_s`` has hung up.

    The ``send`` that waited that long raises :class:`ReaderStalled`, and from then on every
    ``receive`` (the one already waiting included) answers ``http.disconnect``, so whatever the app
    does when a caller leaves (the agent app's hang-up watcher, Starlette's disconnect listener) stops
    the work. The app's response is left incomplete, and uvicorn closes the connection. ``timeout_s``
    defaults to :data:`READER_STALL_S` as it is when the middleware is built. WebSocket and lifespan
    scopes pass through (the WebSocket keep-alive covers those).
    """

    def __init__(self, app: ASGIApp, *, timeout_s: float | None = None) -> None:
        self.app = app
        self.timeout_s = READER_STALL_S if timeout_s is None else timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        reader = _ReaderClock(receive, send, self.timeout_s)
        try:
            await self.app(scope, reader.receive, reader.send)
        except Exception:
            if not reader.stalled.is_set():
                raise
            # Whatever the app made of ReaderStalled (Starlette turns it into ClientDisconnect): the
            # caller is gone, there is nobody to tell.
            logger.warning(
                "a caller took none of the response for %.0f s: treated as a hang-up (uvicorn then "
                "reports the response incomplete)",
                self.timeout_s,
            )


class _ReaderClock:
    """One request's reader deadline: its ``receive`` and ``send`` stand in for the server's."""

    def __init__(self, receive: Receive, send: Send, timeout_s: float) -> None:
        self._receive = receive
        self._send = send
        self._timeout_s = timeout_s
        self.stalled = asyncio.Event()

    async def send(self, message: Message) -> None:
        if self.stalled.is_set():
            raise ReaderStalled("the caller stopped reading")
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._send(message)
        except TimeoutError:
            self.stalled.set()
            raise ReaderStalled("the caller stopped reading") from None

    async def receive(self) -> Message:
        if self.stalled.is_set():
            return {"type": "http.disconnect"}
        message = asyncio.ensure_future(self._receive())
        stalled = asyncio.ensure_future(self.stalled.wait())
        try:
            await asyncio.wait((message, stalled), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stalled.cancel()
            if not message.done():
                message.cancel()
        if message.done() and not message.cancelled():
            return message.result()
        return {"type": "http.disconnect"}
