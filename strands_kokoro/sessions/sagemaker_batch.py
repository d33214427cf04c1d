"""SageMaker response streaming through boto3: ``sagemaker-batch:<endpoint-name>[?region=...]``.

One ``invoke_endpoint_with_response_stream`` call per sentence (POST /invocations semantics of the model
server: body ``{text, voice, speed, sample_rate, format}``). It is the baseline the bidirectional
session is measured against, and the path that works with boto3 alone.

Why the reassembly: SageMaker cuts the container's byte stream into payload parts wherever it likes, so
a part can end mid SSE event, mid UTF-8 character or mid PCM sample. ``format="sse"`` (the default:
it carries the server's coded errors and timings) is decoded by httpx-sse over an httpx response whose
body is the part stream, so lines and events are joined across parts by the library; ``format="pcm"``
(a third smaller, no base64) keeps an odd trailing byte for the next part.

boto3 blocks, so the stream is iterated in a worker thread, one step per executor call: the event
loop never blocks and there is no second event loop. ``cancel`` closes the botocore stream and stops
waiting for the step in flight at once (see ``_in_thread``).

Error mapping: the container refusing a request (``ModelError`` carrying our server's coded error
frame) and a stream that breaks mid-request (``ModelStreamError`` → ``model_stream_error``,
``InternalStreamFailure`` → ``internal_stream_failure``) fail that one request as a
:class:`~strands_kokoro.sessions.base.ServerError` (the next request is a new call, so the session goes
on). An endpoint that cannot be reached, found or signed for raises
:class:`~strands_kokoro.sessions.aws_credentials.SageMakerError` (a ``SessionClosedError``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx
from httpx_sse import EventSource

from strands_kokoro.protocol import DEFAULT_SAMPLE_RATE, audio_ms, control_frame
from strands_kokoro.sessions.aws_credentials import SageMakerError, default_botocore_session, resolve_region
from strands_kokoro.sessions.base import (
    AudioData,
    Cancelled,
    DrainTracker,
    ServerError,
    SessionEvent,
    SpeechRequest,
    SynthesisCompleted,
    SynthesisStarted,
)
from strands_kokoro.sessions.frames import FrameDecoder

if TYPE_CHECKING:
    import botocore.session

_END = object()
_CANCELLED = object()
_CLIENT_CREATION_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class _CancelMarker:
    dropped: int


def _discard_outcome(step: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned step's outcome so asyncio does not log it as never retrieved."""
    if not step.cancelled():
        step.exception()


class PayloadPartStream(httpx.SyncByteStream):
    """The ``Bytes`` of each payload part of a botocore event stream, as an httpx response body."""

    def __init__(self, event_stream: Any) -> None:
        self._event_stream = event_stream

    def __iter__(self) -> Iterator[bytes]:
        for event in self._event_stream:
            part = event.get("PayloadPart")
            if part and part.get("Bytes"):
                yield part["Bytes"]

    def close(self) -> None:
        self._event_stream.close()


def sse_payloads(parts: httpx.SyncByteStream) -> Iterator[str]:
    """The ``data`` of every server-sent event in a byte stream cut at arbitrary offsets."""
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=parts)
    for event in EventSource(response).iter_sse():
        if event.data:
            yield event.data


def pcm_payloads(parts: httpx.SyncByteStream) -> Iterator[bytes]:
    """Whole 16-bit samples from a byte stream cut at arbitrary offsets (an odd byte waits a part)."""
    carry = b""
    for part in parts:
        data = carry + part
        cut = len(data) - len(data) % 2
        carry = data[cut:]
        if cut:
            yield data[:cut]


def _aws_error(exc: Exception) -> tuple[str, str]:
    """(AWS error code, message) of a botocore ``ClientError`` / ``EventStreamError``."""
    response: dict[str, Any] = getattr(exc, "response", {}) or {}
    error = response.get("Error", {})
    return str(error.get("Code", type(exc).__name__)), str(error.get("Message", ""))


class SageMakerBatchSession:
    """A :class:`~strands_kokoro.sessions.base.SpeechSession` over boto3: one streamed call per request.

    Requests run one after another in the order sent (the protocol's ordering rule); ``send`` only
    queues. ``endpoint_url`` points boto3 elsewhere (tests, VPC endpoints).
    """

    def __init__(
        self,
        endpoint_name: str,
        *,
        region: str | None = None,
        format: Literal["sse", "pcm"] = "sse",
        endpoint_url: str | None = None,
        target_variant: str | None = None,
        botocore_session: botocore.session.Session | None = None,
        read_timeout_s: float = 60.0,
        drain_timeout_s: float = 30.0,
    ) -> None:
        if format not in ("sse", "pcm"):
            raise ValueError(f"format must be 'sse' or 'pcm', got {format!r}")
        self.endpoint_name = endpoint_name
        self.region = region
        self.format = format
        self._endpoint_url = endpoint_url
        self._target_variant = target_variant
        self._botocore_session = botocore_session
        self._read_timeout_s = read_timeout_s
        self._drain_timeout_s = drain_timeout_s
        self._client: Any = None
        self._queue: asyncio.Queue[SpeechRequest | _CancelMarker | None] = asyncio.Queue()
        self._current: SpeechRequest | None = None
        self._in_flight: PayloadPartStream | None = None
        self._cancel_generation = 0
        self._cancel_signal: asyncio.Future[None] | None = None
        self._drain = DrainTracker()
        self._closing = False

    async def __aenter__(self) -> SageMakerBatchSession:
        self._client = await asyncio.to_thread(self._create_client)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._close(drain=exc_info[0] is None)

    def _create_client(self) -> Any:
        """Runs in a worker thread: botocore loads its service model from disk."""
        import boto3
        from botocore.config import Config

        session = self._botocore_session or default_botocore_session()
        self.region = resolve_region(self.region, session)
        config = Config(read_timeout=self._read_timeout_s, retries={"mode": "standard", "max_attempts": 3})
        with _CLIENT_CREATION_LOCK:  # botocore sessions are not thread-safe while they build clients
            return boto3.session.Session(botocore_session=session).client(
                "sagemaker-runtime", region_name=self.region, endpoint_url=self._endpoint_url, config=config
            )

    async def send(self, request: SpeechRequest) -> None:
        """Queue one text; the :meth:`events` consumer invokes the endpoint for it in turn."""
        if self._client is None or self._closing:
            raise SageMakerError("not_open", "the session is not open (use `async with session:`)")
        self._drain.sent(request.request_id)
        self._queue.put_nowait(request)

    async def cancel(self) -> None:
        """Drop queued requests and stop the one in flight; the consumer then sees ``Cancelled``."""
        dropped = 0
        while not self._queue.empty():
            item = self._queue.get_nowait()
            dropped += isinstance(item, SpeechRequest)
        self._cancel_generation += 1
        if self._cancel_signal is not None and not self._cancel_signal.done():
            self._cancel_signal.set_result(None)
        dropped += self._current is not None
        if self._in_flight is not None:
            with contextlib.suppress(Exception):
                self._in_flight.close()
        self._queue.put_nowait(_CancelMarker(dropped))

    async def events(self) -> AsyncIterator[SessionEvent]:
        """Yield each request's events in order until :meth:`close`."""
        self._drain.consuming = True
        try:
            while True:
                item = await self._queue.get()
                if item is None:
                    return
                if isinstance(item, _CancelMarker):
                    self._drain.settle(Cancelled(item.dropped))
                    yield Cancelled(item.dropped)
                    continue
                self._current = item
                try:
                    async for event in self._invoke(item):
                        self._drain.settle(event)
                        yield event
                finally:
                    self._current = None
        finally:
            self._drain.stop_consuming()

    def _body(self, request: SpeechRequest) -> bytes:
        body: dict[str, Any] = {"text": request.text, "request_id": request.request_id, "format": self.format}
        for key in ("voice", "speed", "sample_rate", "lang"):
            if (value := getattr(request, key)) is not None:
                body[key] = value
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _start_stream(self, request: SpeechRequest) -> PayloadPartStream:
        """Runs in a worker thread: sends the request and waits for the response headers."""
        kwargs: dict[str, Any] = {
            "EndpointName": self.endpoint_name,
            "Body": self._body(request),
            "ContentType": "application/json",
            "Accept": "text/event-stream" if self.format == "sse" else "application/octet-stream",
        }
        if self._target_variant:
            kwargs["TargetVariant"] = self._target_variant
        response = self._client.invoke_endpoint_with_response_stream(**kwargs)
        return PayloadPartStream(response["Body"])

    async def _in_thread(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run one blocking boto3 step in a worker thread; return ``_CANCELLED`` at once on cancel().

        A read blocked on the socket does not wake when another thread closes the stream, so on cancel
        the step is abandoned (its thread ends when the closed stream errors or the read times out)
        instead of holding the next request back.
        """
        loop = asyncio.get_running_loop()
        if self._cancel_signal is None or self._cancel_signal.done():
            self._cancel_signal = loop.create_future()
        step = loop.run_in_executor(None, function, *args)
        try:
            await asyncio.wait({step, self._cancel_signal}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not step.done():
                step.add_done_callback(_discard_outcome)
        return step.result() if step.done() else _CANCELLED

    async def _invoke(self, request: SpeechRequest) -> AsyncIterator[SessionEvent]:
        generation = self._cancel_generation
        started = time.perf_counter()
        try:
            parts = await self._in_thread(self._start_stream, request)
        except Exception as exc:
            if generation == self._cancel_generation:
                yield self._refused(request, exc)
            return
        if parts is _CANCELLED or generation != self._cancel_generation:
            if isinstance(parts, PayloadPartStream):
                parts.close()
            return
        self._in_flight = parts
        payloads: Iterator[Any] = sse_payloads(parts) if self.format == "sse" else pcm_payloads(parts)
        decoder = FrameDecoder()
        sample_rate = request.sample_rate or DEFAULT_SAMPLE_RATE
        n_bytes = chunks = 0
        first_audio_ms: float | None = None
        try:
            if self.format == "pcm":
                yield SynthesisStarted(request.request_id, sample_rate)
            while True:
                try:
                    payload = await self._in_thread(next, payloads, _END)
                except Exception as exc:
                    if generation != self._cancel_generation:
                        return
                    yield self._broken(request, exc)
                    return
                if generation != self._cancel_generation:
                    return
                if payload is _END:
                    break
                event = self._decode(request, payload, decoder)
                if isinstance(event, AudioData):
                    first_audio_ms = first_audio_ms or (time.perf_counter() - started) * 1000
                    n_bytes += len(event.pcm)
                    chunks += 1
                if event is not None:
                    yield event
            if self.format == "pcm":
                elapsed_ms = (time.perf_counter() - started) * 1000
                yield SynthesisCompleted(
                    request.request_id, audio_ms(n_bytes, sample_rate), chunks, first_audio_ms, elapsed_ms
                )
        finally:
            self._in_flight = None
            with contextlib.suppress(Exception):
                parts.close()

    def _decode(self, request: SpeechRequest, payload: Any, decoder: FrameDecoder) -> SessionEvent | None:
        if isinstance(payload, bytes):
            return AudioData(request.request_id, payload)
        frame = control_frame(payload)
        if frame is not None and frame.get("type") == "audio":
            try:
                pcm = base64.b64decode(str(frame.get("audio", "")), validate=True)
            except (binascii.Error, ValueError):
                return ServerError(request.request_id, "bad_audio", "an SSE audio event did not carry base64")
            raw_id = frame.get("request_id")
            return AudioData(raw_id if isinstance(raw_id, str) else request.request_id, pcm) if pcm else None
        return decoder.decode(payload)

    def _refused(self, request: SpeechRequest, exc: Exception) -> ServerError:
        """The invocation failed before any audio: the container's coded error, or a SageMakerError."""
        from botocore.exceptions import ClientError, NoCredentialsError

        if isinstance(exc, NoCredentialsError):
            raise SageMakerError("no_credentials", str(exc)) from exc
        if not isinstance(exc, ClientError):
            raise SageMakerError("connection_failed", f"{type(exc).__name__}: {exc}") from exc
        code, message = _aws_error(exc)
        if code != "ModelError":
            raise SageMakerError("endpoint_unavailable", message, aws_code=code) from exc
        original = str(exc.response.get("OriginalMessage", ""))
        frame = control_frame(original) if original else None
        if frame is not None and frame.get("type") == "error" and isinstance(frame.get("code"), str):
            raw_id = frame.get("request_id")
            request_id = raw_id if isinstance(raw_id, str) else request.request_id
            return ServerError(request_id, frame["code"], str(frame.get("message", "")))
        return ServerError(request.request_id, "model_error", original or message)

    def _broken(self, request: SpeechRequest, exc: Exception) -> ServerError:
        """The stream broke mid-request: SageMaker's stream errors fail this request; the rest is a drop."""
        from botocore.exceptions import EventStreamError

        if isinstance(exc, EventStreamError):
            # botocore keeps only Code and Message of stream errors (ModelStreamError's ErrorCode is dropped).
            code, message = _aws_error(exc)
            ours = "model_stream_error" if code == "ModelStreamError" else "internal_stream_failure"
            return ServerError(request.request_id, ours, f"{code}: {message}")
        raise SageMakerError("connection_failed", f"{type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        """Let the consumer finish the requests already sent, then release the client; idempotent.

        Only a consumer of :meth:`events` drains requests; with none attached nobody wants the audio, so
        close does not wait (as in the bidirectional session).
        """
        await self._close(drain=True)

    async def _close(self, *, drain: bool) -> None:
        if self._client is None or self._closing:
            return
        self._closing = True
        if drain:
            await self._drain.wait_drained(self._drain_timeout_s)
        if self._drain.pending:
            await self.cancel()
        self._queue.put_nowait(None)
        client, self._client = self._client, None
        await asyncio.to_thread(client.close)


def open(endpoint_name: str, region: str | None = None, **options: Any) -> SageMakerBatchSession:
    """Factory used by ``open_session("sagemaker-batch:<name>?region=...")``; returns an unopened session."""
    return SageMakerBatchSession(endpoint_name, region=region, **options)
