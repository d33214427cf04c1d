"""SageMaker bidirectional streaming: ``sagemaker:<endpoint-name>[?region=...]``.

The same persistent session as ``ws://``, routed by SageMaker: every protocol message goes up as one
``RequestPayloadPart``, every server frame (JSON control text or raw PCM) comes back as one
``ResponsePayloadPart``, which is why the whole-JSON-object rule (DESIGN §3) classifies them.

Things the HTTP/2 SDK (``aws-sdk-sagemaker-runtime-http2``) needs that are easy to get wrong:

- Its default transport is aiohttp, which cannot stream both ways; bidirectional streaming needs the
  CRT client forced to HTTP/2, on port 8443 of the regional runtime host.
- Its credential chain is not boto3's; we sign with botocore's (:mod:`.aws_credentials`).
- Each event is signed with the previous event's signature, so sends are serialised by a lock.
- Ending the input stream makes SageMaker hang up on the container: audio still in flight is lost.
  :meth:`SageMakerBidiSession.close` therefore waits until every sent request has completed (as seen by
  the :meth:`~SageMakerBidiSession.events` consumer) before it sends ``close`` and ends the input.
- The client owns an HTTP/2 connection bound to the event loop that opened it: one client per session,
  never shared across threads or loops.

Error mapping (all :class:`~strands_kokoro.sessions.aws_credentials.SageMakerError`, a
:class:`~strands_kokoro.sessions.base.SessionClosedError`, so the caller reopens and re-sends):
``ModelStreamError`` → ``model_stream_error`` (``aws_code`` keeps SageMaker's, e.g. ``StreamBroken``),
``InternalStreamFailure`` → ``internal_stream_failure``, ``ModelError`` at open → ``model_error``,
``InputValidationError`` / ``ServiceUnavailableError`` / ``InternalServerError`` → ``endpoint_unavailable``,
anything the transport raises → ``connection_failed``. The server's own ``error`` frames stay
:class:`~strands_kokoro.sessions.base.ServerError` events: the session goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
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
    ResponseStreamEventPayloadPart,
    ServiceUnavailableError,
)
from smithy_core.exceptions import SmithyIdentityError

# Imported eagerly: awscrt comes with the SDK's `awscrt` extra, and a missing one must fail when the
# factory imports this module (a coded `missing_dependency`), not at the first reconnect.
from smithy_http.aio.crt import AWSCRTHTTPClient, AWSCRTHTTPClientConfig

from strands_kokoro.protocol import CANCEL_MESSAGE, CLOSE_MESSAGE
from strands_kokoro.sessions.aws_credentials import (
    BotocoreCredentialsResolver,
    SageMakerError,
    default_botocore_session,
    resolve_region,
)
from strands_kokoro.sessions.base import (
    DrainTracker,
    SessionEvent,
    SpeechRequest,
)
from strands_kokoro.sessions.frames import FrameDecoder

if TYPE_CHECKING:
    import botocore.session
    from smithy_core.aio.eventstream import DuplexEventStream
    from smithy_core.aio.interfaces.eventstream import EventReceiver
    from smithy_http.aio.interfaces import HTTPClient

logger = logging.getLogger(__name__)

BIDI_PORT = 8443
"""SageMaker serves bidirectional streams on the runtime host's port 8443, not 443."""


def bidi_endpoint_uri(region: str) -> str:
    return f"https://runtime.sagemaker.{region}.amazonaws.com:{BIDI_PORT}"


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
                return SageMakerError("model_stream_error", seen.message or "", aws_code=seen.error_code)
            case InternalStreamFailure():
                return SageMakerError("internal_stream_failure", seen.message or "")
            case ModelError():
                detail = seen.original_message or seen.message or ""
                return SageMakerError("model_error", detail, aws_code=seen.error_code)
            case InputValidationError() | ServiceUnavailableError() | InternalServerError():
                aws_code = type(seen).__name__
                return SageMakerError("endpoint_unavailable", seen.message or "", aws_code=aws_code)
            case SmithyIdentityError():
                return SageMakerError("no_credentials", str(seen))
        seen = seen.__cause__
    return SageMakerError("connection_failed", f"{type(exc).__name__}: {exc}")


class SessionNotOpenError(SageMakerError):
    """Used before ``async with`` opened the stream (a programming error, reported like a drop)."""

    def __init__(self) -> None:
        super().__init__("not_open", "the session is not open (use `async with session:`)")


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
        session = self._botocore_session or await asyncio.to_thread(default_botocore_session)
        region = await asyncio.to_thread(resolve_region, self.region, session)
        self.region = region
        resolver = self._credentials_resolver or BotocoreCredentialsResolver(session)
        config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
            region=region,
            endpoint_uri=self._endpoint_uri or bidi_endpoint_uri(region),
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

    async def send(self, request: SpeechRequest) -> None:
        """Queue one sentence on the stream; never waits for audio."""
        self._drain.sent(request.request_id)
        await self._publish(request.wire_message())

    async def cancel(self) -> None:
        await self._publish(CANCEL_MESSAGE)

    async def events(self) -> AsyncIterator[SessionEvent]:
        """Yield the server's frames as events until :meth:`close`; an unasked end raises SageMakerError."""
        if self._output is None:
            raise SessionNotOpenError()
        output = self._output
        decoder = FrameDecoder()
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
                    if self._closing:
                        return
                    raise SageMakerError("connection_failed", "SageMaker ended the stream")
                if not isinstance(part, ResponseStreamEventPayloadPart):
                    logger.debug("ignoring unknown SageMaker stream event %r", part)
                    continue
                event = decoder.decode(part.value.bytes_ or b"")
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
                    await self._publish(CLOSE_MESSAGE)
                with contextlib.suppress(Exception):
                    await stream.input_stream.close()
                if self._output is not None:
                    with contextlib.suppress(Exception):
                        await self._output.close()
        finally:
            self._client = None
            await client.close()


def open(endpoint_name: str, region: str | None = None, **options: Any) -> SageMakerBidiSession:
    """Factory used by ``open_session("sagemaker:<name>?region=...")``; returns an unopened session."""
    return SageMakerBidiSession(endpoint_name, region=region, **options)
