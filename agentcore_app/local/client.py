"""Invoke the agent app as a real client would and time every event on arrival.

Two transports, one output: a local/any HTTP app (``http://host:port``, POST /invocations with httpx) and a
deployed AgentCore runtime (``arn:aws:bedrock-agentcore:...``, boto3 ``invoke_agent_runtime``). Both bodies
are parsed by httpx-sse, which buffers until the blank line that ends an event: SSE delivery chunks can
end mid-event (the seed saw 4 audio frames arrive as 6 chunks, 2 ending mid-frame), so an event is only
decoded once it is whole.

The clock starts just before the request is sent, so "time to first audio" is what a listener waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import EventSource, aconnect_sse

from agentcore_app.local.turn_record import TimedEvent, TurnRecord
from agentcore_app.runtime_session import SESSION_HEADER, new_session_id

INVOKE_TIMEOUT_S = 300.0


def payload_for(
    prompt: str,
    mode: str,
    voice: str | None = None,
    speed: float | None = None,
    audio_format: str | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {"prompt": prompt, "mode": mode}
    if audio_format is not None:
        payload["format"] = audio_format
    if voice is not None:
        payload["voice"] = voice
    if speed is not None:
        payload["speed"] = speed
    return payload


@dataclass(slots=True)
class Wire:
    """Bytes a transport delivered for one turn (the response body, or every WebSocket frame)."""

    bytes: int = 0


async def invoke_http(
    client: httpx.AsyncClient,
    base_url: str,
    payload: dict[str, Any],
    *,
    session_id: str | None = None,
    wire: Wire | None = None,
) -> AsyncIterator[TimedEvent]:
    """POST /invocations on an agent app and yield its events as they complete.

    ``session_id`` is sent as AgentCore's session header, as the runtime forwards it to the container.
    """
    started = time.perf_counter()
    url = base_url.rstrip("/") + "/invocations"
    headers = {} if session_id is None else {SESSION_HEADER: session_id}
    async with aconnect_sse(
        client, "POST", url, json=payload, headers=headers, timeout=INVOKE_TIMEOUT_S
    ) as source:
        async for sse in source.aiter_sse():
            if wire is not None:
                wire.bytes = source.response.num_bytes_downloaded
            if sse.data:
                yield TimedEvent((time.perf_counter() - started) * 1000.0, json.loads(sse.data))
        if wire is not None:
            wire.bytes = source.response.num_bytes_downloaded


class _BotoBodyStream(httpx.AsyncByteStream):
    """A botocore streaming body as an httpx byte stream, read in a worker thread chunk by chunk."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (chunk := await asyncio.to_thread(next, self._chunks, b"")) != b"":
            yield chunk


async def invoke_runtime(
    agentcore_client: Any,
    runtime_arn: str,
    payload: dict[str, Any],
    *,
    qualifier: str | None = None,
    session_id: str | None = None,
) -> AsyncIterator[TimedEvent]:
    """Invoke a deployed AgentCore runtime (boto3 ``bedrock-agentcore``) in conversation ``session_id``.

    Without one, a fresh runtime session per turn: the run measures a cold conversation, never one that
    remembers the last.
    """
    started = time.perf_counter()
    params: dict[str, Any] = {
        "agentRuntimeArn": runtime_arn,
        "runtimeSessionId": session_id or new_session_id(),
        "payload": json.dumps(payload).encode("utf-8"),
        "contentType": "application/json",
        "accept": "text/event-stream",
    }
    if qualifier:
        params["qualifier"] = qualifier
    response = await asyncio.to_thread(agentcore_client.invoke_agent_runtime, **params)
    body = response["response"]
    content_type = response.get("contentType", "text/event-stream")
    stream = _BotoBodyStream(iter(body.iter_chunks(chunk_size=4096)))
    http_response = httpx.Response(200, headers={"content-type": content_type}, stream=stream)
    try:
        async for sse in EventSource(http_response).aiter_sse():
            if sse.data:
                yield TimedEvent((time.perf_counter() - started) * 1000.0, json.loads(sse.data))
    finally:
        body.close()


async def run_turn(
    endpoint_url: str,
    prompt: str,
    mode: str,
    *,
    http_client: httpx.AsyncClient | None = None,
    agentcore_client: Any = None,
    voice: str | None = None,
    session_id: str | None = None,
    transport: str = "sse",
    audio_format: str | None = None,
) -> TurnRecord:
    """Run one turn against ``endpoint_url`` (http(s) URL or AgentCore runtime ARN) and record it.

    ``session_id``: the conversation this turn continues (None: a turn of its own). ``transport``:
    ``sse`` (POST /invocations) or ``ws`` (the app's ``/ws``: binary audio; a runtime ARN is signed with
    SigV4, :mod:`agentcore_app.local.ws_client`). ``audio_format``: ``pcm`` (default), ``opus`` or ``mp3``.
    """
    record = TurnRecord(mode=mode)
    payload = payload_for(prompt, mode, voice, audio_format=audio_format)
    if transport == "ws":
        from agentcore_app.local.ws_client import run_ws_turn

        return (await run_ws_turn(endpoint_url, payload, record, session_id=session_id)).finish()
    wire = Wire()
    if endpoint_url.startswith("arn:"):
        if agentcore_client is None:
            import boto3

            region = endpoint_url.split(":")[3] or None
            agentcore_client = boto3.client("bedrock-agentcore", region_name=region)
        async for timed in invoke_runtime(agentcore_client, endpoint_url, payload, session_id=session_id):
            record.add(timed)
        return record.finish()
    async with contextlib.AsyncExitStack() as stack:
        client = http_client
        if client is None:
            client = await stack.enter_async_context(httpx.AsyncClient(timeout=INVOKE_TIMEOUT_S))
        async for timed in invoke_http(client, endpoint_url, payload, session_id=session_id, wire=wire):
            record.add(timed)
    record.wire_bytes = wire.bytes
    return record.finish()
