"""POST /invocations as a session: ``http://`` / ``https://`` endpoints, one streamed call per request.

Each streamed response becomes the same start/audio/complete events the WebSocket session yields.
Queueing, order and cancel are :class:`~strands_kokoro.sessions.base.OneRequestAtATimeSession`'s. The body
asked for is SSE (``format="sse"``), so the server's coded ``error`` (report it, go on) is told apart
from a broken stream (reopen and re-send); httpx-sse joins events across chunks.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import httpx
from httpx_sse import aconnect_sse

from strands_kokoro.errors import SessionErrorCode
from strands_kokoro.protocol import (
    INVOCATIONS_PATH,
    AudioData,
    ErrorCode,
    Invocation,
    ServerError,
    SynthesisCompleted,
    SynthesizeRequest,
    http_status_code,
    parse_error_body,
    parse_sse_data,
)
from strands_kokoro.sessions.base import (
    FrameDecoder,
    OneRequestAtATimeSession,
    SessionClosedError,
    SessionEvent,
)


def invocations_url(endpoint: str) -> str:
    stripped = endpoint.rstrip("/")
    return stripped if stripped.endswith(INVOCATIONS_PATH) else stripped + INVOCATIONS_PATH


def refusal(body: bytes, response: httpx.Response, request_id: str) -> ServerError:
    """A refused POST as the server's coded error. A 429 is ``overloaded`` even from a proxy that wrote
    no coded body, and its ``Retry-After`` header (seconds) is the wait when the body names none."""
    error = parse_error_body(body, request_id=request_id, status=response.status_code)
    if response.status_code == 429 and error.code == http_status_code(429):
        error = ServerError(request_id, ErrorCode.OVERLOADED, "the speech server is busy (HTTP 429)")
    after = _retry_after_ms(response.headers.get("retry-after"))
    if error.retry_after_ms is None and after is not None:
        error = ServerError(error.request_id, error.code, error.message, after)
    return error


def _retry_after_ms(header: str | None) -> int | None:
    """``Retry-After: 2`` → 2000; an HTTP date or anything else → None (the client's own backoff)."""
    try:
        seconds = float(header) if header is not None else None
    except ValueError:
        return None
    return round(seconds * 1000) if seconds is not None and 0 <= seconds < 86_400 else None


class HttpSession(OneRequestAtATimeSession):
    """:class:`~strands_kokoro.sessions.base.SpeechSession` over POST /invocations (format ``sse``)."""

    def __init__(
        self, endpoint: str, *, timeout: float = 60.0, client: httpx.AsyncClient | None = None
    ) -> None:
        super().__init__()
        self.url = invocations_url(endpoint)
        self._timeout = timeout
        self._client = client
        self._owns_client = client is None

    async def __aenter__(self) -> HttpSession:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout)
        self._open = True
        return self

    async def _release(self) -> None:
        await super()._release()
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _invoke(self, request: SynthesizeRequest) -> AsyncGenerator[SessionEvent, None]:
        if self._client is None:
            raise self._not_open()
        request_id = request.request_id or ""
        body = Invocation(request, "sse").to_body()
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        decoder = FrameDecoder()
        try:
            async with aconnect_sse(self._client, "POST", self.url, content=body, headers=headers) as source:
                if source.response.status_code != 200:
                    refused = await source.response.aread()
                    error = refusal(refused, source.response, request_id)
                    if error.code == ErrorCode.NOT_READY:
                        # A (re)started server still loading its model (503): reopen and re-send later,
                        # as after a drop; refusing the request would skip its sentence.
                        raise SessionClosedError(f"{self.url} is still loading its model")
                    yield error
                    return
                async for sse in source.aiter_sse():
                    try:
                        message = parse_sse_data(sse.data, request_id=request_id) if sse.data else None
                    except ValueError:
                        yield ServerError(
                            request_id, SessionErrorCode.BAD_AUDIO, "an SSE audio event did not carry base64"
                        )
                        return
                    if isinstance(message, AudioData):
                        yield message
                    elif message is not None:
                        yield decoder.control(message)
                        if isinstance(message, SynthesisCompleted | ServerError):
                            return
                yield ServerError(
                    request_id, SessionErrorCode.INCOMPLETE_STREAM, "the audio stream ended unfinished"
                )
        except httpx.HTTPError as exc:
            raise SessionClosedError(f"POST {self.url} failed: {type(exc).__name__}") from exc
