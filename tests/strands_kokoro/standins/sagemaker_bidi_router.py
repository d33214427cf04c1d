"""A local stand-in of SageMaker's bidirectional-streaming router, plugged into the REAL HTTP/2 SDK.

Why a transport and not a socket: over plain ``http`` the SDK's CRT client falls back to HTTP/1.1 and
holds the request body until it is closed, so no local socket server can play SageMaker's part. The
SDK lets a transport replace the HTTP client, so everything above the socket stays real: request
serialisation, SigV4 signing of the request and of every event (chained signatures), event-stream
encoding and decoding, error deserialisation.

What the router does, as SageMaker does:
- checks the signed request (route, SigV4 credential scope, signed event envelopes);
- opens the model server's WebSocket and forwards each request payload part as one BINARY frame;
- wraps each server frame as ``PayloadPart`` response events with the headers SageMaker's bidi contract
  defines: ``DataType`` ``UTF8`` for a text frame, ``BINARY`` for a binary one, and ``CompletionState``
  (``split_into=n`` sends each frame as ``n`` parts, ``PARTIAL`` ... ``COMPLETE``, the way a fragmented
  frame reaches the client: SageMaker passes fragments through, it never joins them);
  ``part_headers=False`` sends bare parts with neither header (what a client must still read, by content);
- when the client ends its input stream, hangs up on the container at once: audio still in flight is
  lost, which is why a session must not end its input before the audio is drained;
- optionally injects a ``ModelStreamError`` after a given number of response parts (``break_after``),
  or in the middle of the first server frame ``break_when`` picks (only that frame's first part goes out,
  then the error: the stream breaks mid-frame, as a dropped connection would).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import websockets
from smithy_aws_event_stream.events import Event, EventMessage
from smithy_http import Field, Fields
from smithy_http.aio import HTTPResponse

from strands_kokoro.protocol import WS_PATH

_ROUTE = re.compile(r"^/endpoints/(?P<name>[^/]+)/invocations-bidirectional-stream$")
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/\d{8}/(?P<region>[^/]+)/sagemaker/aws4_request, "
    r"SignedHeaders=(?P<signed>[^,]+), Signature=[0-9a-f]{64}$"
)


@dataclass
class RouterLog:
    """What the router saw, for assertions: the requests' endpoint names, forwarded parts, signatures."""

    endpoint_names: list[str] = field(default_factory=list)
    access_keys: list[str] = field(default_factory=list)
    forwarded_parts: list[bytes] = field(default_factory=list)
    chunk_signatures: list[bytes] = field(default_factory=list)
    partial_parts: int = 0
    input_ended: int = 0
    streams_broken: int = 0


class StandInRequestRejected(Exception):
    """The SDK built a request SageMaker would refuse (wrong route, unsigned, ...)."""


class SageMakerBidiRouter:
    """Use as ``async with SageMakerBidiRouter(ws_url) as router:`` and pass ``transport=router``.

    One router serves any number of sessions. A session's bridge tasks end when its stream does;
    leaving the ``async with`` block (or ``aclose``) stops any left, so none outlives the test.
    """

    SUPPORTS_DUPLEX_STREAMING = True
    TIMEOUT_EXCEPTIONS: tuple[type[Exception], ...] = ()

    def __init__(
        self,
        model_ws_url: str,
        *,
        region: str = "us-east-1",
        dns_suffix: str = "amazonaws.com",
        break_after: int | None = None,
        break_when: Callable[[str | bytes], bool] | None = None,
        split_into: int = 1,
        part_headers: bool = True,
    ) -> None:
        if split_into < 1 or (split_into > 1 and not part_headers):
            raise ValueError("split_into must be >= 1, and a split frame needs CompletionState headers")
        self.model_ws_url = model_ws_url.rstrip("/") + WS_PATH
        self.region = region
        self.host = f"runtime.sagemaker.{region}.{dns_suffix}"
        self.break_after = break_after
        self.break_when = break_when
        self.split_into = split_into
        self.part_headers = part_headers
        self.log = RouterLog()
        self._bridges: set[asyncio.Task[None]] = set()
        self._failures: list[BaseException] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> SageMakerBidiRouter:
        """The SDK deep-copies its config; every copy must reach this same router."""
        return self

    async def __aenter__(self) -> SageMakerBidiRouter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every bridge still running; re-raise what a bridge failed with (a rejected event)."""
        for task in self._bridges:
            task.cancel()
        await asyncio.gather(*self._bridges, return_exceptions=True)
        if self._failures:
            raise self._failures[0]

    async def send(self, request: Any, *, request_config: Any = None) -> HTTPResponse:
        """Accept one signed bidi request and bridge it to the model server's WebSocket."""
        self._check(request)
        # No keepalive pings: a test that checks a turn leaves no task behind sees only the bridges.
        websocket = await websockets.connect(
            self.model_ws_url, max_size=None, close_timeout=2, ping_interval=None
        )
        parts: asyncio.Queue[bytes | None] = asyncio.Queue()
        for bridge in (self._forward_input(request.body, websocket), self._forward_output(websocket, parts)):
            task = asyncio.create_task(bridge)
            self._bridges.add(task)
            task.add_done_callback(self._bridge_done)
        fields = Fields([Field(name="content-type", values=["application/vnd.amazon.eventstream"])])
        return HTTPResponse(status=200, fields=fields, body=_drain(parts))

    def _bridge_done(self, task: asyncio.Task[None]) -> None:
        self._bridges.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            self._failures.append(exc)

    def _check(self, request: Any) -> None:
        path = request.destination.path or ""
        route = _ROUTE.match(path)
        if request.method != "POST" or route is None:
            raise StandInRequestRejected(f"not a bidi stream request: {request.method} {path}")
        if request.destination.host != self.host:
            raise StandInRequestRejected(f"unexpected host {request.destination.host}")
        if request.destination.port != 8443:
            raise StandInRequestRejected(
                f"bidi streams are served on port 8443, not {request.destination.port}"
            )
        if "authorization" not in request.fields or "x-amz-date" not in request.fields:
            raise StandInRequestRejected("the request is not SigV4-signed")
        auth = _AUTH.match(request.fields["authorization"].as_string())
        if auth is None or auth["region"] != self.region or "host" not in auth["signed"].split(";"):
            raise StandInRequestRejected("malformed SigV4 Authorization header")
        self.log.endpoint_names.append(route["name"])
        self.log.access_keys.append(auth["key"])

    async def _forward_input(self, body: AsyncIterator[bytes], websocket: Any) -> None:
        """Unwrap each signed envelope; forward its payload part; hang up when the input ends."""
        buffer = b""
        try:
            async for chunk in body:
                buffer += chunk
                while len(buffer) >= 4 and len(buffer) >= (total := int.from_bytes(buffer[:4], "big")):
                    envelope = Event.decode(io.BytesIO(buffer[:total]))
                    buffer = buffer[total:]
                    assert envelope is not None
                    signature = envelope.message.headers.get(":chunk-signature")
                    if not isinstance(signature, bytes) or ":date" not in envelope.message.headers:
                        raise StandInRequestRejected("an input event was not signed")
                    self.log.chunk_signatures.append(signature)
                    if not envelope.message.payload:  # the signed empty frame: end of input
                        return
                    inner = Event.decode(io.BytesIO(envelope.message.payload))
                    assert inner is not None
                    if inner.message.headers.get(":event-type") != "PayloadPart":
                        raise StandInRequestRejected(f"unexpected input event {inner.message.headers}")
                    self.log.forwarded_parts.append(inner.message.payload)
                    with contextlib.suppress(websockets.ConnectionClosed):  # a broken stream swallows input
                        await websocket.send(inner.message.payload)  # bytes: SageMaker sends binary frames
        finally:
            self.log.input_ended += 1
            await websocket.close()

    async def _forward_output(self, websocket: Any, parts: asyncio.Queue[bytes | None]) -> None:
        sent = 0
        try:
            async for frame in websocket:
                if self.break_when is not None and self.break_when(frame):
                    self.log.streams_broken += 1
                    parts.put_nowait(self._response_parts(frame)[0])
                    parts.put_nowait(model_stream_error("StreamBroken", "the model closed the stream"))
                    await websocket.close()
                    return
                for part in self._response_parts(frame):
                    if self.break_after is not None and sent >= self.break_after:
                        self.log.streams_broken += 1
                        parts.put_nowait(model_stream_error("StreamBroken", "the model closed the stream"))
                        await websocket.close()
                        return
                    parts.put_nowait(part)
                    sent += 1
        except websockets.ConnectionClosed:
            pass
        finally:
            parts.put_nowait(None)

    def _response_parts(self, frame: str | bytes) -> list[bytes]:
        """One server frame as encoded ``PayloadPart`` events (several when ``split_into`` > 1)."""
        data = frame.encode("utf-8") if isinstance(frame, str) else frame
        if not self.part_headers:
            return [payload_part(data)]
        data_type = "UTF8" if isinstance(frame, str) else "BINARY"
        pieces = split_frame(data, self.split_into)
        self.log.partial_parts += len(pieces) - 1
        last = len(pieces) - 1
        return [
            payload_part(piece, data_type, "PARTIAL" if i < last else "COMPLETE")
            for i, piece in enumerate(pieces)
        ]


def split_frame(data: bytes, n: int) -> list[bytes]:
    """``data`` cut into ``n`` non-empty pieces of near-equal size (fewer when it is shorter than ``n``)."""
    n = max(1, min(n, len(data)))
    bounds = [len(data) * i // n for i in range(n + 1)]
    return [data[start:end] for start, end in itertools.pairwise(bounds)]


def payload_part(data: bytes, data_type: str | None = None, completion_state: str | None = None) -> bytes:
    """A ``PayloadPart`` event; each header is left out when None, as an older router would."""
    headers: dict[str, Any] = {
        ":message-type": "event",
        ":event-type": "PayloadPart",
        ":content-type": "application/octet-stream",
    }
    if data_type is not None:
        headers["DataType"] = data_type
    if completion_state is not None:
        headers["CompletionState"] = completion_state
    return EventMessage(headers=headers, payload=data).encode()


def model_stream_error(error_code: str, message: str) -> bytes:
    headers: dict[str, Any] = {
        ":message-type": "exception",
        ":exception-type": "ModelStreamError",
        ":content-type": "application/json",
    }
    payload = json.dumps({"Message": message, "ErrorCode": error_code}).encode()
    return EventMessage(headers=headers, payload=payload).encode()


async def _drain(parts: asyncio.Queue[bytes | None]) -> AsyncIterator[bytes]:
    while (part := await parts.get()) is not None:
        yield part
