"""SageMaker bidirectional streaming: ``sagemaker:<endpoint-name>[?region=...]``.

The same persistent session as ``ws://``, routed by SageMaker: each protocol message goes up as one
``RequestPayloadPart``; a server frame comes back as parts joined until the one that completes it
(:class:`PartAssembler`, bounded by ``max_frame_bytes``). A ``UTF8`` frame is control, a ``BINARY`` one
audio. Sends are serialised (each event is signed with the previous one's signature); :meth:`close`
waits for every sent request first, since ending the input makes SageMaker hang up on the container.
Every SageMaker failure is a ``SageMakerError`` (a ``SessionClosedError``: reopen and re-send); the
server's ``error`` frames stay events. The SDK's pitfalls and the error table: architecture §9,
"Sessions".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
from aws_sdk_sagemaker_runtime_http2.models import (
    InputValidationError,
    InternalServerError,
    InternalStreamFailure,
    InvokeEndpointWithBidirectionalStreamInput,
    ModelError,
    ModelStreamError,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
    ResponsePayloadPart,
    ResponseStreamEventPayloadPart,
    ServiceUnavailableError,
)
from smithy_core.exceptions import SmithyIdentityError

# Imported eagerly: awscrt comes with the SDK's `awscrt` extra, and a missing one must fail when the
# factory imports this module (a coded `missing_dependency`), not at the first reconnect.
from smithy_http.aio.crt import AWSCRTHTTPClient, AWSCRTHTTPClientConfig

from strands_kokoro.errors import SessionErrorCode
from strands_kokoro.protocol import Cancel, Close, SynthesizeRequest
from strands_kokoro.sessions.aws_credentials import (
    BotocoreCredentialsResolver,
    SageMakerError,
    default_botocore_session,
    resolve_region,
)
from strands_kokoro.sessions.base import DrainTracker, FrameDecoder, SessionEvent
from strands_kokoro.sessions.sagemaker_endpoint import bidi_endpoint_uri

if TYPE_CHECKING:
    import botocore.session
    from smithy_core.aio.eventstream import DuplexEventStream
    from smithy_core.aio.interfaces.eventstream import EventReceiver
    from smithy_http.aio.interfaces import HTTPClient

logger = logging.getLogger(__name__)

MAX_FRAME_BYTES = 16 * 1024 * 1024
"""Largest response frame joined from PARTIAL parts: ~5.8 min of 24 kHz PCM, far above any chunk the
server sends, far below what a runaway PARTIAL sequence would take from the process."""

UTF8 = "UTF8"
BINARY = "BINARY"
PARTIAL = "PARTIAL"


def crt_http2_transport() -> HTTPClient:
    """The CRT client, forced to HTTP/2: the only transport in the SDK that streams both ways."""
    return AWSCRTHTTPClient(client_config=AWSCRTHTTPClientConfig(force_http_2=True))


def _error_from(exc: BaseException) -> SageMakerError:
    """Map what the SDK raises (often wrapped in ``SmithyError``) to one coded session error."""
    seen: BaseException | None = exc
    while seen is not None:
        match seen:
            case SageMakerError():
                return seen
            case ModelStreamError():
                return SageMakerError(
                    SessionErrorCode.MODEL_STREAM_ERROR, seen.message or "", aws_code=seen.error_code
                )
            case InternalStreamFailure():
                return SageMakerError(SessionErrorCode.INTERNAL_STREAM_FAILURE, seen.message or "")
            case ModelError():
                detail = seen.original_message or seen.message or ""
                return SageMakerError(SessionErrorCode.MODEL_ERROR, detail, aws_code=seen.error_code)
            case InputValidationError() | ServiceUnavailableError() | InternalServerError():
                aws_code = type(seen).__name__
                return SageMakerError(
                    SessionErrorCode.ENDPOINT_UNAVAILABLE, seen.message or "", aws_code=aws_code
                )
            case SmithyIdentityError():
                return SageMakerError(SessionErrorCode.NO_CREDENTIALS, str(seen))
        seen = seen.__cause__
    return SageMakerError(SessionErrorCode.CONNECTION_FAILED, f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True, slots=True)
class ResponseFrame:
    """One server frame joined from its parts; ``data_type`` is None when SageMaker did not say."""

    payload: bytes
    data_type: str | None


class PartAssembler:
    """Joins ``ResponsePayloadPart``s into whole server frames: PARTIAL ... then the completing part.

    A frame's ``DataType`` is the first one its parts carry (each part should carry the same; a
    disagreement is logged, not fatal). A value other than ``UTF8``/``BINARY`` counts as absent.
    """

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._chunks: list[bytes] = []
        self._size = 0
        self._data_type: str | None = None
        self.pending = False
        """A frame has begun (a PARTIAL part arrived) and not completed yet."""

    def add(self, part: ResponsePayloadPart) -> ResponseFrame | None:
        """Take one part; return the frame it completes, or None while the frame is still PARTIAL."""
        chunk = part.bytes_ or b""
        if self._size + len(chunk) > self.max_frame_bytes:
            self._reset()
            raise SageMakerError(
                SessionErrorCode.FRAME_TOO_LARGE,
                f"a response frame grew past max_frame_bytes={self.max_frame_bytes}",
            )
        data_type = part.data_type.upper() if part.data_type else None
        if data_type not in (UTF8, BINARY):
            data_type = None
        if self._data_type is None:
            self._data_type = data_type
        elif data_type is not None and data_type != self._data_type:
            logger.warning(
                "a %s frame continued with a %s part; kept %s", self._data_type, data_type, self._data_type
            )
        if chunk:
            self._chunks.append(chunk)
            self._size += len(chunk)
        if (part.completion_state or "").upper() == PARTIAL:
            self.pending = True
            return None
        frame = ResponseFrame(b"".join(self._chunks), self._data_type)
        self._reset()
        return frame

    def _reset(self) -> None:
        self._chunks = []
        self._size = 0
        self._data_type = None
        self.pending = False


def event_from_frame(frame: ResponseFrame, decoder: FrameDecoder) -> SessionEvent | None:
    """Classify one whole frame by its ``DataType``; only a frame without one uses the content rule."""
    if frame.data_type == UTF8:
        try:
            return decoder.decode(frame.payload.decode("utf-8"))
        except (UnicodeDecodeError, RecursionError):
            logger.warning("dropping a UTF8 frame that is not UTF-8 JSON (%d bytes)", len(frame.payload))
            return None
    if frame.data_type == BINARY:
        return decoder.audio(frame.payload)  # outside any request (a cancelled one's tail): dropped
    return decoder.decode(frame.payload)


class SessionNotOpenError(SageMakerError):
    """Used before ``async with`` opened the stream (a programming error, reported like a drop)."""

    def __init__(self) -> None:
        super().__init__(SessionErrorCode.NOT_OPEN, "the session is not open (use `async with session:`)")


class SageMakerBidiSession:
    """:class:`~strands_kokoro.sessions.base.SpeechSession` over SageMaker's bidirectional stream.

    ``transport`` and ``credentials_resolver`` exist for tests and unusual deployments: the default is the
    CRT HTTP/2 client and botocore's credential chain (``botocore_session``, else the process-wide one).
    """

    def __init__(
        self,
        endpoint_name: str,
        *,
        region: str | None = None,
        endpoint_uri: str | None = None,
        target_variant: str | None = None,
        model_invocation_path: str | None = None,
        model_query_string: str | None = None,
        botocore_session: botocore.session.Session | None = None,
        credentials_resolver: BotocoreCredentialsResolver | None = None,
        transport: HTTPClient | None = None,
        drain_timeout_s: float = 30.0,
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        self.endpoint_name = endpoint_name
        self.region = region
        self._endpoint_uri = endpoint_uri
        self._input = InvokeEndpointWithBidirectionalStreamInput(
            endpoint_name=endpoint_name,
            target_variant=target_variant,
            model_invocation_path=model_invocation_path,
            model_query_string=model_query_string,
        )
        self._botocore_session = botocore_session
        self._credentials_resolver = credentials_resolver
        self._transport = transport
        self._drain_timeout_s = drain_timeout_s
        self._max_frame_bytes = max_frame_bytes
        self._client: AsyncSageMakerRuntimeHTTP2Client | None = None
        self._stream: DuplexEventStream[Any, Any, Any] | None = None
        self._output: EventReceiver[Any] | None = None
        self._send_lock = asyncio.Lock()
        self._drain = DrainTracker()
        self._closing = False

    async def __aenter__(self) -> SageMakerBidiSession:
        await self._open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._close(drain=exc_info[0] is None)

    async def _open(self) -> None:
        session: botocore.session.Session = self._botocore_session or await asyncio.to_thread(
            default_botocore_session
        )
        region = await asyncio.to_thread(resolve_region, self.region, session)
        self.region = region
        # The session's own loader: it honours AWS_DATA_PATH and caches partitions.json once per session.
        endpoint_uri = self._endpoint_uri or await asyncio.to_thread(
            lambda: bidi_endpoint_uri(region, session.get_component("data_loader"))
        )
        resolver = self._credentials_resolver or BotocoreCredentialsResolver(session)
        config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
            region=region,
            endpoint_uri=endpoint_uri,
            aws_credentials_identity_resolver=resolver,
            transport=self._transport or crt_http2_transport(),
        )
        self._client = AsyncSageMakerRuntimeHTTP2Client(config=config)
        try:
            self._stream = await self._client.invoke_endpoint_with_bidirectional_stream(self._input)
            _, self._output = await self._stream.await_output()
        except Exception as exc:
            await self._client.close()
            self._client = None
            raise _error_from(exc) from exc

    async def _publish(self, message: str) -> None:
        if self._stream is None:
            raise SessionNotOpenError()
        part = RequestPayloadPart(bytes_=message.encode("utf-8"), data_type="UTF8")
        try:
            async with self._send_lock:
                await self._stream.input_stream.send(RequestStreamEventPayloadPart(value=part))
        except Exception as exc:
            raise _error_from(exc) from exc

    async def send(self, request: SynthesizeRequest) -> None:
        """Queue one sentence on the stream; never waits for audio."""
        if request.request_id is not None:
            self._drain.sent(request.request_id)
        await self._publish(request.to_wire())

    async def cancel(self) -> None:
        await self._publish(Cancel().to_wire())

    async def events(self) -> AsyncIterator[SessionEvent]:
        """Yield the server's frames as events until :meth:`close`; an unasked end raises SageMakerError."""
        if self._output is None:
            raise SessionNotOpenError()
        output = self._output
        decoder = FrameDecoder()
        assembler = PartAssembler(self._max_frame_bytes)
        self._drain.consuming = True
        try:
            while True:
                try:
                    part = await output.receive()
                except Exception as exc:
                    if self._closing and not isinstance(exc, ModelStreamError | InternalStreamFailure):
                        return
                    raise _error_from(exc) from exc
                if part is None:
                    if assembler.pending:
                        logger.debug("the stream ended inside a PARTIAL frame; dropping its parts")
                    if self._closing:
                        return
                    raise SageMakerError(SessionErrorCode.CONNECTION_FAILED, "SageMaker ended the stream")
                if not isinstance(part, ResponseStreamEventPayloadPart):
                    logger.debug("ignoring unknown SageMaker stream event %r", part)
                    continue
                frame = assembler.add(part.value)
                event = event_from_frame(frame, decoder) if frame is not None else None
                if event is not None:
                    self._drain.settle(event)
                    yield event
        finally:
            self._drain.stop_consuming()

    async def close(self) -> None:
        """Wait until sent requests are drained, say ``close``, then end the input stream; idempotent."""
        await self._close(drain=True)

    async def _close(self, *, drain: bool) -> None:
        if self._client is None or self._closing:
            return
        self._closing = True
        client, stream = self._client, self._stream
        try:
            if drain:
                await self._drain.wait_drained(self._drain_timeout_s)
            if stream is not None:
                with contextlib.suppress(SageMakerError):
                    if not drain and self._drain.pending:
                        # The turn ended under its requests: the server drops them, not synthesizes them.
                        await self._publish(Cancel().to_wire())
                    await self._publish(Close().to_wire())
                with contextlib.suppress(Exception):
                    await stream.input_stream.close()
                if self._output is not None:
                    with contextlib.suppress(Exception):
                        await self._output.close()
        finally:
            self._client = None
            await client.close()


def session_for(endpoint_name: str, region: str | None = None, **options: Any) -> SageMakerBidiSession:
    """Factory used by ``open_session("sagemaker:<name>?region=...")``; returns an unopened session."""
    return SageMakerBidiSession(endpoint_name, region=region, **options)
