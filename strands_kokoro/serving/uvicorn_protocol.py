"""uvicorn's HTTP protocol with a deadline for the request headers, its WebSocket protocol with refusals that
complete the handshake, and the settings both servers use.

Why a protocol subclass: uvicorn has no deadline for a request being received (its ``timeout_keep_alive``
covers only the idle time between two requests and is reset by every byte; encode/uvicorn#157 asks for
``--timeout-request-start`` since 2018), and an ASGI middleware cannot help, because the app runs only
once the headers are complete. So a connection that opens and sends nothing, or sends half a request line
and stops, was held forever (200 such connections were all held open). Here a timer starts when the
connection opens and again when the next request's first byte arrives; once the headers are complete (or
the connection became a WebSocket) it is off. On expiry the server writes its own coded 408
(``connection: close``) and closes the connection. The body has its own deadline, in the app
(:class:`strands_kokoro.serving.deadlines.BodyDeadline`), so the answer there can be the app's own.

Only the protocol's public asyncio hooks (``connection_made``, ``data_received``, ``connection_lost``)
and its ``cycle`` attribute are used, so the same mixin sits on both of uvicorn's HTTP implementations:
httptools where it is installed (the model server's ``uvicorn[standard]``), h11 otherwise (the agent
app's image).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from strands_kokoro.serving.deadlines import (
    HEADER_TIMEOUT_S,
    KEEP_ALIVE_S,
    WS_PING_INTERVAL_S,
    WS_PING_TIMEOUT_S,
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
else:
    _Base = object


class _HeaderDeadline(_Base):
    """The mixin: a request's headers must be complete ``header_timeout_s`` after it began."""

    refusal: bytes = b""  # the raw 408 response; set by :func:`header_deadline_protocol`
    header_timeout_s: float = HEADER_TIMEOUT_S
    _header_timer: asyncio.TimerHandle | None = None

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

    class RefusalCompletesHandshake(WebSocketsSansIOProtocol):
        """uvicorn's WebSocket protocol (``websockets-sansio``, what it picks when ``websockets`` is
        installed), with a handshake refused by a response counted as complete.

        Why: uvicorn 0.54 logs ``ERROR: ASGI callable returned without completing handshake.`` after
        every handshake an app refuses through the ``websocket.http.response`` extension, although the
        caller got the refusal (its ``wsproto`` protocol does not; the fix is proposed upstream in
        Kludex/uvicorn#3138). Both servers refuse cross-site handshakes that way, with a coded body, so
        any page probing them wrote server errors into the log.
        """

        async def send(self, message: Any) -> None:
            await super().send(message)
            if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
                self.handshake_complete = True


def header_deadline_protocol(
    refusal: Refusal, timeout_s: float = HEADER_TIMEOUT_S, *, base: type[Any] | None = None
) -> type[asyncio.Protocol]:
    """uvicorn's preferred HTTP protocol class (or ``base``), answering ``refusal`` to headers that stall."""
    if base is None:
        base = HttpToolsProtocol if HttpToolsProtocol is not None else H11Protocol
    attributes = {"refusal": refusal.raw(), "header_timeout_s": timeout_s}
    name = f"HeaderDeadline{base.__name__}"
    protocol: type[asyncio.Protocol] = type(name, (_HeaderDeadline, base), attributes)
    return protocol


def uvicorn_settings(refusal: Refusal, *, header_timeout_s: float = HEADER_TIMEOUT_S) -> dict[str, Any]:
    """The uvicorn settings for silent peers (``uvicorn.run(app, **uvicorn_settings(...))``)."""
    settings: dict[str, Any] = {
        "http": header_deadline_protocol(refusal, header_timeout_s),
        "timeout_keep_alive": KEEP_ALIVE_S,
        "ws_ping_interval": WS_PING_INTERVAL_S,
        "ws_ping_timeout": WS_PING_TIMEOUT_S,
    }
    if WebSocketsSansIOProtocol is not None:
        settings["ws"] = RefusalCompletesHandshake
    return settings
