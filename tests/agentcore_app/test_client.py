"""The demo's client: SSE events reassembled across awkward delivery chunks, over HTTP and through boto3."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import boto3
import httpx
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from agentcore_app.local.client import run_turn
from agentcore_app.local.stack import serve_asgi

PCM = bytes(range(256)) * 40  # starts with 0x00 and contains 0x7b '{' and '\n' bytes
EVENTS: list[dict[str, Any]] = [
    {"type": "agent_start", "request_id": "r1", "mode": "bidi"},
    {"type": "text_delta", "seq": 0, "text": "Hello there. "},
    {
        "type": "audio_chunk",
        "seq": 0,
        "sentence": 0,
        "audio": base64.b64encode(PCM).decode(),
        "format": "pcm_s16le",
        "sample_rate": 24000,
        "channels": 1,
    },
    {"type": "text_delta", "seq": 1, "text": "Ünïcode ✓ survives a split."},
    {"type": "agent_end", "request_id": "r1", "mode": "bidi", "first_audio_ms": 1.0, "chunks": 1},
]
SSE_BODY = b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in EVENTS)


def _check(record: Any) -> None:
    assert [e.event for e in record.events] == EVENTS
    assert bytes(record.pcm) == PCM
    assert record.text == "Hello there. Ünïcode ✓ survives a split."
    times = [e.at_ms for e in record.events]
    assert times == sorted(times)


async def _split_sse_server_turn(piece: int) -> Any:
    """A real HTTP server that delivers the SSE body ``piece`` bytes at a time (mid-base64, mid-\\n\\n)."""

    async def invocations(request: Request) -> StreamingResponse:
        assert (await request.json())["mode"] == "bidi"

        async def body() -> AsyncIterator[bytes]:
            for i in range(0, len(SSE_BODY), piece):
                yield SSE_BODY[i : i + piece]
                await asyncio.sleep(0)

        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/invocations", invocations, methods=["POST"])])
    async with serve_asgi(app) as url:
        return await run_turn(url, "hi", "bidi")


def test_http_events_reassembled_across_split_chunks() -> None:
    for piece in (1, 3, 7, 64, 1000):
        _check(asyncio.run(_split_sse_server_turn(piece)))


class _TrickleRaw(io.RawIOBase):
    """A response body that hands out at most ``piece`` bytes per read, like a slow network."""

    def __init__(self, data: bytes, piece: int) -> None:
        self._data = io.BytesIO(data)
        self._piece = piece

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        return self._data.read(self._piece if size < 0 else min(size, self._piece))


def test_runtime_arn_via_boto3_with_stubber() -> None:
    """The ARN path runs boto3's real request building and response parsing (Stubber replaces the wire)."""
    client = boto3.client(
        "bedrock-agentcore", region_name="us-west-2", aws_access_key_id="AKIDTEST", aws_secret_access_key="x"
    )
    arn = "arn:aws:bedrock-agentcore:us-west-2:123456789012:runtime/voice_agent-abc123"
    seen_sessions: list[str] = []
    client.meta.events.register(
        "provide-client-params.bedrock-agentcore.InvokeAgentRuntime",
        lambda params, **_: seen_sessions.append(params["runtimeSessionId"]),
    )
    with Stubber(client) as stubber:
        for piece in (5, 11):
            stubber.add_response(
                "invoke_agent_runtime",
                {
                    "response": StreamingBody(_TrickleRaw(SSE_BODY, piece), len(SSE_BODY)),
                    "contentType": "text/event-stream",
                    "statusCode": 200,
                },
                {
                    "agentRuntimeArn": arn,
                    "runtimeSessionId": ANY,
                    "payload": json.dumps({"prompt": "hi", "mode": "bidi"}).encode(),
                    "contentType": "application/json",
                    "accept": "text/event-stream",
                },
            )
            _check(asyncio.run(run_turn(arn, "hi", "bidi", agentcore_client=client)))
        stubber.assert_no_pending_responses()
    # A fresh runtime session per run, long enough for the service (>= 33 characters).
    assert len(set(seen_sessions)) == 2 and all(len(s) >= 33 for s in seen_sessions)


def test_http_error_status_still_reports_the_error_event() -> None:
    async def scenario() -> Any:
        body = b'data: {"type":"error","code":"bad_json","message":"request body is not valid JSON"}\n\n'

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(400, content=body, headers={"content-type": "text/event-stream"})

        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            return await run_turn("http://agent.invalid", "hi", "bidi", http_client=http)

    record = asyncio.run(scenario())
    assert record.summary()["errors"][0]["code"] == "bad_json"
