"""uvicorn's protocols with the deadlines and answers both servers need, and the settings both run with.

The HTTP protocol gets a deadline for the request headers: uvicorn has none (its keep-alive covers only
the idle time between requests), and an ASGI middleware runs only once the headers are complete. A timer
starts when the connection opens and again at the next request's first byte, and stops once the headers
are complete (or the connection became a WebSocket); on expiry the server writes its coded 408 and
closes. Only the protocol's public asyncio hooks and ``cycle`` are used, so the mixin fits both httptools
and h11. The WebSocket protocol logs at INFO what any caller can cause (refused handshakes, text frames
that are not UTF-8) and answers a handshake its parser refuses with a coded 431.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from uvicorn.protocols.http.h11_impl import H11Protocol

from kokoro_serving.deadlines import (
    CLOSE_STALL_S,
    HANDSHAKE_TOO_LARGE,
    HEADER_TIMEOUT_S,
    HEADERS_TIMED_OUT,
    KEEP_ALIVE_S,
    NOT_HTTP,
    WS_PING_INTERVAL_S,
    WS_PING_TIMEOUT_S,
    LayerAnswer,
    Refusal,
)

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools not installed: uvicorn itself falls back to h11 the same way
    HttpToolsProtocol = None  # type: ignore[assignment,misc]
try:
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
except ImportError:  # no websockets package: uvicorn picks its other WebSocket protocol itself
    WebSocketsSansIOProtocol = None  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    _Base = H11Protocol
    _AnyProtocol = asyncio.BaseProtocol
else:
    _Base = _AnyProtocol = object


class ClosingTransport:
    """A transport whose ``close()`` cannot be held open by a peer that stopped reading.

    ``close()`` sends what is buffered before it closes; every :data:`CLOSE_STALL_S` after it, a buffer
    that has not shrunk since the last look means the peer takes nothing, and the connection is reset.
    A proxy rather than a subclass: uvloop's transports (the model server's ``uvicorn[standard]``) are
    extension types, which take neither a subclass from here nor a patched method.
    """

    def __init__(self, transport: asyncio.BaseTransport, stall_s: float = CLOSE_STALL_S) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._stall_s = stall_s
        self._watching = False

    def close(self) -> None:
        if not self._transport.is_closing():  # closed already (its socket may be gone): nothing to set
            self._give_up_in_the_kernel_too()
        self._transport.close()
        if not self._watching:
            self._watching = True
            self._look(unsent=self._transport.get_write_buffer_size())

    def _look(self, unsent: int) -> None:
        if unsent == 0:
            return  # flushed (or handed to the kernel): the close completes on its own
        loop = asyncio.get_running_loop()
        loop.call_later(self._stall_s, self._check, unsent)

    def _check(self, unsent_before: int) -> None:
        unsent = self._transport.get_write_buffer_size()
        if 0 < unsent >= unsent_before:  # nothing taken in CLOSE_STALL_S
            self.reset()
            return
        self._look(unsent)

    def _give_up_in_the_kernel_too(self) -> None:
        """Once this process's buffer is flushed the socket closes, and the kernel goes on offering its
        own buffer to the peer for minutes; ``TCP_USER_TIMEOUT`` (Linux) bounds that to three times
        :data:`CLOSE_STALL_S` without progress. Longer than the reset's own wait, so a peer whose bytes
        are still here gets the reset (which tells it, and any proxy between, that the connection is
        gone) rather than a silent drop. A peer that reads, however slowly, keeps it going."""
        sock = self._transport.get_extra_info("socket")
        option = getattr(socket, "TCP_USER_TIMEOUT", None)
        if sock is not None and option is not None:
            # ValueError: uvloop's socket view of a connection the peer has just closed has no fd left.
            with contextlib.suppress(OSError, ValueError):
                sock.setsockopt(socket.IPPROTO_TCP, option, int(3 * self._stall_s * 1000))

    def reset(self) -> None:
        """Drop the connection with a TCP reset: ``abort()`` alone frees only this process's buffer; the
        kernel would go on offering its own to the peer (SO_LINGER 0 makes the close a reset)."""
        sock = self._transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError, ValueError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _ResetStalledClose(_AnyProtocol):
    """The mixin: the protocol's transport is a :class:`ClosingTransport` (once, also after an upgrade
    hands the same transport to the WebSocket protocol)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        closing = transport if isinstance(transport, ClosingTransport) else ClosingTransport(transport)
        super().connection_made(closing)  # type: ignore[arg-type]  # a proxy with the transport's API


class _HeaderDeadline(_ResetStalledClose, _Base):
    """The mixin: a request's headers must be complete ``header_timeout_s`` after it began."""

    refusal: bytes = b""  # the raw 408 response; set by :func:`header_deadline_protocol`
    malformed: bytes = b""  # the raw coded 400 for what is not HTTP/1.1 (empty: uvicorn's plain one)
    header_timeout_s: float = HEADER_TIMEOUT_S
    _header_timer: asyncio.TimerHandle | None = None

    def send_400_response(self, msg: str) -> None:
        """What uvicorn answers a request its parser refuses (a bad chunk size, a header with a NUL,
        both Content-Length and chunked): the server's own coded 400 instead of plain text."""
        if not self.malformed:
            super().send_400_response(msg)
            return
        self.transport.write(self.malformed)
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        if self._header_timer is None and (cycle is None or cycle.response_complete):
            self._arm()  # the first byte of the next request on a kept-alive connection
        super().data_received(data)
        if self.transport.get_protocol() is not self or self.cycle is not cycle:
            self._disarm()  # headers complete (a new cycle runs the app) or upgraded to a WebSocket

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_timed_out)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        self.transport.write(self.refusal)
        self.transport.close()


if WebSocketsSansIOProtocol is not None:

    class QuietWebSocketProtocol(_ResetStalledClose, WebSocketsSansIOProtocol):
        """uvicorn's WebSocket protocol (``websockets-sansio``, what it picks when ``websockets`` is
        installed) without the two ERROR logs any caller could write into a server's log at will.

        - A handshake refused by a response counts as complete: uvicorn 0.54 logs ``ERROR: ASGI callable
          returned without completing handshake.`` after every handshake an app refuses through the
          ``websocket.http.response`` extension, although the caller got the refusal (its ``wsproto``
          protocol does not; the fix is proposed upstream in Kludex/uvicorn#3138). Both servers refuse
          cross-site handshakes that way, with a coded body.
        - A text frame that is not UTF-8 is closed 1007 as uvicorn does, logged at INFO: uvicorn logs it
          with ``logger.exception`` (a traceback at ERROR per frame).
        - A handshake the ``websockets`` parser refuses before any request event (a request line or a
          header over its 8,192 bytes) is answered with ``handshake_refusal`` and closed: uvicorn 0.54
          writes nothing and keeps the connection open for good, so one write per connection could
          hold any number of them.
        """

        handshake_refusal: bytes = b""  # the server's coded answer; set by :func:`uvicorn_settings`

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            refused = self.conn.handshake_exc is not None and not self.handshake_initiated
            if refused and not self.transport.is_closing():
                self.handshake_initiated = self.handshake_complete = self.close_sent = True
                self.transport.write(self.handshake_refusal or b"".join(self.conn.data_to_send()))
                self.transport.close()

        async def send(self, message: Any) -> None:
            await super().send(message)
            if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
                self.handshake_complete = True

        def send_receive_event_to_app(self) -> None:
            if self.curr_msg_data_type == "text" and not self.close_sent:
                try:
                    b"".join(self.frames).decode()
                except UnicodeDecodeError:
                    self.frames = []
                    self.logger.info("a WebSocket text frame that is not UTF-8: closed with 1007")
                    self.conn.send_close(1007)
                    self.handle_parser_exception()
                    return
            super().send_receive_event_to_app()


def header_deadline_protocol(
    refusal: Refusal,
    timeout_s: float = HEADER_TIMEOUT_S,
    *,
    malformed: Refusal | None = None,
    base: type[Any] | None = None,
) -> type[asyncio.Protocol]:
    """uvicorn's preferred HTTP protocol class (or ``base``), answering ``refusal`` to headers that stall
    and ``malformed`` to a request its parser refuses."""
    if base is None:
        base = HttpToolsProtocol if HttpToolsProtocol is not None else H11Protocol
    attributes = {
        "refusal": refusal.raw(),
        "malformed": malformed.raw() if malformed else b"",
        "header_timeout_s": timeout_s,
    }
    name = f"HeaderDeadline{base.__name__}"
    protocol: type[asyncio.Protocol] = type(name, (_HeaderDeadline, base), attributes)
    return protocol


def uvicorn_settings(
    written: Callable[[LayerAnswer], Refusal], *, header_timeout_s: float = HEADER_TIMEOUT_S
) -> dict[str, Any]:
    """The uvicorn settings for silent peers and malformed requests (``uvicorn.run(app, **...)``), with
    the protocol layer's answers (headers that stall, what is not HTTP/1.1, a WebSocket handshake too
    large for the WebSocket parser) ``written`` in the server's own format."""
    malformed = written(NOT_HTTP)
    settings: dict[str, Any] = {
        "http": header_deadline_protocol(written(HEADERS_TIMED_OUT), header_timeout_s, malformed=malformed),
        "timeout_keep_alive": KEEP_ALIVE_S,
        "ws_ping_interval": WS_PING_INTERVAL_S,
        "ws_ping_timeout": WS_PING_TIMEOUT_S,
    }
    if WebSocketsSansIOProtocol is not None:
        answer = written(HANDSHAKE_TOO_LARGE).raw()
        settings["ws"] = type(
            "QuietWebSocketProtocol", (QuietWebSocketProtocol,), {"handshake_refusal": answer}
        )
    return settings
