"""The persistent bidirectional session straight to a model server: ``ws://`` / ``wss://``.

One WebSocket carries every sentence of a turn, so the TCP/TLS handshake and the server's per-session
setup are paid once, not once per sentence. Sends never wait for audio; the caller iterates
:meth:`WebSocketSession.events` in its own task.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from strands_kokoro.protocol import WS_PATH, Cancel, Close, ErrorCode, ServerError, SynthesizeRequest
from strands_kokoro.sessions.base import FrameDecoder, SessionClosedError, SessionEvent

# A received frame may be this large: audio frames are a few hundred ms of PCM; 4 MiB leaves room for
# long segments at 48 kHz.
MAX_RECEIVED_FRAME_BYTES = 4 * 1024 * 1024


def websocket_url(endpoint: str) -> str:
    """``ws://host:port`` → ``ws://host:port/invocations-bidirectional-stream`` (a full URL is kept)."""
    stripped = endpoint.rstrip("/")
    return stripped if stripped.endswith(WS_PATH) else stripped + WS_PATH


class WebSocketSession:
    """:class:`~strands_kokoro.sessions.base.SpeechSession` over the server's WebSocket route."""

    def __init__(self, endpoint: str, *, open_timeout: float = 10.0, **connect_options: Any) -> None:
        self.url = websocket_url(endpoint)
        self._open_timeout = open_timeout
        self._connect_options = connect_options
        self._ws: ClientConnection | None = None
        self._closing = False

    async def __aenter__(self) -> WebSocketSession:
        try:
            self._ws = await connect(
                self.url,
                open_timeout=self._open_timeout,
                max_size=MAX_RECEIVED_FRAME_BYTES,
                **self._connect_options,
            )
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise SessionClosedError(f"cannot open {self.url}: {type(exc).__name__}") from exc
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._close(abandon=exc_info[0] is not None)

    def _connection(self) -> ClientConnection:
        if self._ws is None:
            raise SessionClosedError("the session is not open (use `async with session:`)")
        return self._ws

    async def _send(self, message: str) -> None:
        try:
            await self._connection().send(message)
        except ConnectionClosed as exc:
            raise SessionClosedError(f"connection to {self.url} dropped") from exc

    async def send(self, request: SynthesizeRequest) -> None:
        await self._send(request.to_wire())

    async def cancel(self) -> None:
        await self._send(Cancel().to_wire())

    async def events(self) -> AsyncIterator[SessionEvent]:
        """Yield decoded frames until :meth:`close`; a drop the caller did not ask for raises."""
        ws = self._connection()
        decoder = FrameDecoder()
        try:
            async for payload in ws:
                event = decoder.decode(payload)
                if (
                    isinstance(event, ServerError)
                    and event.request_id is None
                    and event.code == ErrorCode.NOT_READY
                ):
                    # A (re)started server whose model is still loading; it closes with 1013 "try again
                    # later" next. A reason to reconnect and re-send, not a speech failure to report.
                    raise SessionClosedError(f"{self.url} is still loading its model")
                if event is not None:
                    yield event
        except ConnectionClosed as exc:
            if not self._closing:
                raise SessionClosedError(f"connection to {self.url} dropped") from exc
            return
        if not self._closing:
            # The server closed cleanly (e.g. 1001 going away) without being asked: still a drop.
            raise SessionClosedError(f"{self.url} closed the session")

    async def close(self) -> None:
        """Say ``close`` (the protocol's only session end) and close the socket; idempotent."""
        await self._close(abandon=False)

    async def _close(self, *, abandon: bool) -> None:
        """``abandon``: the block ended with an exception (the turn was cancelled: a hang-up, a failure).

        Then ``cancel`` goes first: ``close`` alone makes the server finish every queued request before
        it closes, for a listener who is gone.
        """
        if self._ws is None or self._closing:
            return
        self._closing = True
        with contextlib.suppress(ConnectionClosed):
            if abandon:
                await self._ws.send(Cancel().to_wire())
            await self._ws.send(Close().to_wire())
        await self._ws.close()
