"""SageMaker response streaming through boto3: ``sagemaker-batch:<endpoint-name>[?region=...]``.

One ``invoke_endpoint_with_response_stream`` call per sentence, with an SSE body (the protocol's
:class:`~strands_kokoro.protocol.Invocation`), decoded by httpx-sse over the part stream, since SageMaker
cuts the bytes anywhere. boto3 blocks, so the stream is iterated in a worker thread one step at a time;
``cancel`` stops at once. Queueing, order and cancel are
:class:`~strands_kokoro.sessions.base.OneRequestAtATimeSession`'s. A refused or broken request fails alone
as a :class:`~strands_kokoro.protocol.ServerError`; an endpoint that cannot be reached, found or signed for
raises :class:`~strands_kokoro.sessions.aws_credentials.SageMakerError` (architecture §9, "Sessions").
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

import httpx
from httpx_sse import EventSource

from strands_kokoro.errors import SessionErrorCode
from strands_kokoro.protocol import (
    HTTP_STATUS_CODE_PREFIX,
    AudioData,
    Invocation,
    ServerError,
    SynthesizeRequest,
    parse_error_body,
    parse_sse_data,
)
from strands_kokoro.sessions.aws_credentials import SageMakerError, default_botocore_session, resolve_region
from strands_kokoro.sessions.base import FrameDecoder, OneRequestAtATimeSession, SessionEvent

if TYPE_CHECKING:
    import botocore.session

_END: Final = object()
_CANCELLED: Final = object()
_CLIENT_CREATION_LOCK = threading.Lock()


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


def _aws_error(exc: Exception) -> tuple[str, str]:
    """(AWS error code, message) of a botocore ``ClientError`` / ``EventStreamError``."""
    response: dict[str, Any] = getattr(exc, "response", {}) or {}
    error = response.get("Error", {})
    return str(error.get("Code", type(exc).__name__)), str(error.get("Message", ""))


class SageMakerBatchSession(OneRequestAtATimeSession):
    """A :class:`~strands_kokoro.sessions.base.SpeechSession` over boto3: one streamed call per request.

    ``endpoint_url`` points boto3 elsewhere (tests, VPC endpoints).
    """

    def __init__(
        self,
        endpoint_name: str,
        *,
        region: str | None = None,
        endpoint_url: str | None = None,
        target_variant: str | None = None,
        botocore_session: botocore.session.Session | None = None,
        read_timeout_s: float = 60.0,
        drain_timeout_s: float = 30.0,
    ) -> None:
        super().__init__(drain_timeout_s=drain_timeout_s)
        self.endpoint_name = endpoint_name
        self.region = region
        self._endpoint_url = endpoint_url
        self._target_variant = target_variant
        self._botocore_session = botocore_session
        self._read_timeout_s = read_timeout_s
        self._client: Any = None
        self._in_flight: PayloadPartStream | None = None
        self._cancel_signal: asyncio.Future[None] | None = None

    async def __aenter__(self) -> SageMakerBatchSession:
        self._client = await asyncio.to_thread(self._create_client)
        self._open = True
        return self

    def _not_open(self) -> SageMakerError:
        return SageMakerError(
            SessionErrorCode.NOT_OPEN, "the session is not open (use `async with session:`)"
        )

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

    async def _release(self) -> None:
        await super()._release()
        client, self._client = self._client, None
        await asyncio.to_thread(client.close)

    async def cancel(self) -> None:
        """Also stop waiting for the boto3 step in flight and close its stream (see ``_in_thread``)."""
        await super().cancel()
        if self._cancel_signal is not None and not self._cancel_signal.done():
            self._cancel_signal.set_result(None)
        if self._in_flight is not None:
            with contextlib.suppress(Exception):
                self._in_flight.close()

    def _start_stream(self, request: SynthesizeRequest) -> PayloadPartStream:
        """Runs in a worker thread: sends the request and waits for the response headers."""
        kwargs: dict[str, Any] = {
            "EndpointName": self.endpoint_name,
            "Body": Invocation(request, "sse").to_body(),
            "ContentType": "application/json",
            "Accept": "text/event-stream",
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

    async def _invoke(self, request: SynthesizeRequest) -> AsyncGenerator[SessionEvent, None]:
        generation = self._generation
        request_id = request.request_id or ""
        try:
            parts = await self._in_thread(self._start_stream, request)
        except Exception as exc:
            if not self._cancelled_since(generation):
                yield self._refused(request_id, exc)
            return
        if parts is _CANCELLED or self._cancelled_since(generation):
            if isinstance(parts, PayloadPartStream):
                parts.close()
            return
        self._in_flight = parts
        payloads = sse_payloads(parts)
        decoder = FrameDecoder()
        try:
            while True:
                try:
                    payload = await self._in_thread(next, payloads, _END)
                except Exception as exc:
                    if not self._cancelled_since(generation):
                        yield self._broken(request_id, exc)
                    return
                if payload is _END or payload is _CANCELLED or self._cancelled_since(generation):
                    break
                event = self._decode(request_id, payload, decoder)
                if event is not None:
                    yield event
        finally:
            self._in_flight = None
            with contextlib.suppress(Exception):
                parts.close()

    @staticmethod
    def _decode(request_id: str, payload: str, decoder: FrameDecoder) -> SessionEvent | None:
        try:
            message = parse_sse_data(payload, request_id=request_id)
        except ValueError:
            return ServerError(
                request_id, SessionErrorCode.BAD_AUDIO, "an SSE audio event did not carry base64"
            )
        if message is None or isinstance(message, AudioData):
            return message
        return decoder.control(message)

    def _refused(self, request_id: str, exc: Exception) -> ServerError:
        """The invocation failed before any audio: the container's coded error, or a SageMakerError."""
        from botocore.exceptions import ClientError, NoCredentialsError

        if isinstance(exc, NoCredentialsError):
            raise SageMakerError(SessionErrorCode.NO_CREDENTIALS, str(exc)) from exc
        if not isinstance(exc, ClientError):
            raise SageMakerError(SessionErrorCode.CONNECTION_FAILED, f"{type(exc).__name__}: {exc}") from exc
        code, message = _aws_error(exc)
        if code != "ModelError":
            raise SageMakerError(SessionErrorCode.ENDPOINT_UNAVAILABLE, message, aws_code=code) from exc
        original = str(exc.response.get("OriginalMessage", ""))
        status = int(exc.response.get("OriginalStatusCode", 0) or 0)
        refusal = parse_error_body(original.encode("utf-8"), request_id=request_id, status=status)
        if refusal.code.startswith(HTTP_STATUS_CODE_PREFIX):
            return ServerError(request_id, SessionErrorCode.MODEL_ERROR, original or message)
        return refusal

    def _broken(self, request_id: str, exc: Exception) -> ServerError:
        """The stream broke mid-request: SageMaker's stream errors fail this request; the rest is a drop."""
        from botocore.exceptions import EventStreamError

        if isinstance(exc, EventStreamError):
            # botocore keeps only Code and Message of stream errors (ModelStreamError's ErrorCode is dropped).
            code, message = _aws_error(exc)
            ours = (
                SessionErrorCode.MODEL_STREAM_ERROR
                if code == "ModelStreamError"
                else SessionErrorCode.INTERNAL_STREAM_FAILURE
            )
            return ServerError(request_id, ours, f"{code}: {message}")
        raise SageMakerError(SessionErrorCode.CONNECTION_FAILED, f"{type(exc).__name__}: {exc}") from exc


def session_for(endpoint_name: str, region: str | None = None, **options: Any) -> SageMakerBatchSession:
    """Factory used by ``open_session("sagemaker-batch:<name>?region=...")``; returns an unopened session."""
    return SageMakerBatchSession(endpoint_name, region=region, **options)
