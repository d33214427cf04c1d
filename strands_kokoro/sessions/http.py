"""POST /invocations as a session: ``http://`` / ``https://`` endpoints, one request per ``send``.

Hosts that only expose the request/response route (SageMaker's classic contract, a plain load balancer)
still stream audio back while it is produced; this session turns each streamed response into the same
start/audio/complete events the WebSocket session yields, so ``KokoroSpeech`` does not care which one it
talks to. Requests run one after another, in the order sent, inside the caller's ``events()`` loop: no
background task exists that could outlive the session.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from strands_kokoro.protocol import DEFAULT_SAMPLE_RATE, INVOCATIONS_PATH, SAMPLE_WIDTH_BYTES, audio_ms
from strands_kokoro.sessions.base import (
    AudioData,
    Cancelled,
    ServerError,
    SessionClosedError,
    SessionEvent,
    SpeechRequest,
    SynthesisCompleted,
    SynthesisStarted,
)

_CLOSE = object()


@dataclass(frozen=True, slots=True)
class _Cancelled:
    """Queued by ``cancel``: everything queued before it is already gone; report how much."""

    dropped: int


def invocations_url(endpoint: str) -> str:
    stripped = endpoint.rstrip("/")
    return stripped if stripped.endswith(INVOCATIONS_PATH) else stripped + INVOCATIONS_PATH


def _request_body(request: SpeechRequest) -> dict[str, Any]:
    body: dict[str, Any] = {"text": request.text, "format": "pcm"}
    for key in ("voice", "speed", "sample_rate", "lang"):
        value = getattr(request, key)
        if value is not None:
            body[key] = value
    return body


def _error_from_body(request_id: str, status: int, body: bytes) -> ServerError:
    """The server answers a refused request with a JSON error (``{code, message}``, maybe nested)."""
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        obj = obj["error"]
    if isinstance(obj, dict) and isinstance(obj.get("code"), str):
        message = obj.get("message")
        return ServerError(request_id, obj["code"], message if isinstance(message, str) else "")
    return ServerError(request_id, f"http_{status}", f"the server answered HTTP {status}")


class HttpSession:
    """:class:`~strands_kokoro.sessions.base.SpeechSession` over POST /invocations (format ``pcm``)."""

    def __init__(
        self, endpoint: str, *, timeout: float = 60.0, client: httpx.AsyncClient | None = None
    ) -> None:
        self.url = invocations_url(endpoint)
        self._timeout = timeout
        self._client = client
        self._owns_client = client is None
        self._requests: asyncio.Queue[SpeechRequest | object] = asyncio.Queue()
        self._cancel_in_flight = False
        self._closed = False

    async def __aenter__(self) -> HttpSession:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def send(self, request: SpeechRequest) -> None:
        if self._closed:
            raise SessionClosedError("the session is closed")
        self._requests.put_nowait(request)

    async def cancel(self) -> None:
        """Drop every queued request now and stop the one in flight at its next chunk (like the WS route)."""
        dropped = self._drop_queued()
        self._cancel_in_flight = True
        self._requests.put_nowait(_Cancelled(dropped))

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._requests.put_nowait(_CLOSE)

    def _drop_queued(self) -> int:
        kept: list[object] = []
        dropped = 0
        while not self._requests.empty():
            item = self._requests.get_nowait()
            if isinstance(item, SpeechRequest):
                dropped += 1
            elif item is _CLOSE:
                kept.append(item)
            elif isinstance(item, _Cancelled):
                dropped += item.dropped  # an earlier cancel not yet reported: report both as one
        for item in kept:
            self._requests.put_nowait(item)
        return dropped

    async def events(self) -> AsyncIterator[SessionEvent]:
        while True:
            item = await self._requests.get()
            if item is _CLOSE:
                return
            if isinstance(item, _Cancelled):
                self._cancel_in_flight = False
                yield Cancelled(item.dropped)
                continue
            assert isinstance(item, SpeechRequest)
            async for event in self._invoke(item):
                yield event

    async def _invoke(self, request: SpeechRequest) -> AsyncIterator[SessionEvent]:
        if self._client is None:
            raise SessionClosedError("the session is not open (use `async with session:`)")
        started = time.perf_counter()
        sample_rate = request.sample_rate or DEFAULT_SAMPLE_RATE
        try:
            async with self._client.stream("POST", self.url, json=_request_body(request)) as response:
                if response.status_code != 200:
                    yield _error_from_body(request.request_id, response.status_code, await response.aread())
                    return
                header_rate = response.headers.get("x-sample-rate", "")
                sample_rate = int(header_rate) if header_rate.isdigit() else sample_rate
                yield SynthesisStarted(request.request_id, sample_rate)
                total, chunks, first_ms, carry = 0, 0, None, b""
                async for data in response.aiter_bytes():
                    if self._cancel_in_flight:
                        return
                    # HTTP chunks can end mid-sample; only whole s16 samples go out.
                    data = carry + data
                    cut = len(data) - len(data) % SAMPLE_WIDTH_BYTES
                    data, carry = data[:cut], data[cut:]
                    if not data:
                        continue
                    if first_ms is None:
                        first_ms = (time.perf_counter() - started) * 1000.0
                    total += len(data)
                    chunks += 1
                    yield AudioData(request.request_id, data)
        except httpx.HTTPError as exc:
            raise SessionClosedError(f"POST {self.url} failed: {type(exc).__name__}") from exc
        yield SynthesisCompleted(
            request.request_id,
            audio_ms=audio_ms(total, sample_rate),
            chunks=chunks,
            first_audio_ms=first_ms,
            elapsed_ms=(time.perf_counter() - started) * 1000.0,
        )
