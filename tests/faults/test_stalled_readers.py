"""A caller that stops reading the response is a caller that hung up (``ReaderDeadline``).

A connection that dies without a FIN or a reset never produces ``http.disconnect``: the server's writes
fill the socket buffers and its next ``send`` waits. Each test makes such a caller with a raw TCP
client that stops reading (:meth:`tests.faults.raw_http.RawConnection.stop_reading`) and checks that
the server gives up on it: the ``send`` raises, the app's ``receive`` says the caller left, the work
stops. The deadline is shortened to 1 s here; the real 30 s would make every test wait that long for the
same code path. The waits for the outcome are generous bounds (a loaded 2-core machine), never timings.

The model server runs in-process on ``IdEngine`` (a fake engine, made to produce a lot of audio at
once, so the buffers fill in a moment rather than after a minute of real synthesis); the agent app is
the real one, in-process, over real sockets.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from agentcore_app.local.client import run_turn
from agentcore_app.local.stack import agent_app, free_port, serve_asgi
from kokoro_serving import deadlines
from kokoro_serving.deadlines import ReaderDeadline, ReaderStalled
from strands_kokoro.protocol import Invocation, SynthesizeRequest
from tests.faults.agent_app_process import agent_status
from tests.faults.id_engine import IdEngine
from tests.faults.raw_http import RawConnection, let_go, post_head
from tests.model_server_process import wait_for_ping
from tests.scripted_model import FOUR_SENTENCES, ScriptedModel
from tests.tts_container.server_harness import idle, stats, wait_for_stats
from tts_container.__main__ import SERVER_OPTIONS
from tts_container.app import create_app

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.timeout(300)]
STALL_S = 1.0
BOUND_S = 60.0  # how long the servers may take to give up and settle (a bound, not a measurement)
CHUNK = b"\0" * 65536


@pytest.fixture
def short_reader_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Apps built from here on give up on a caller after ``STALL_S`` (their middleware reads it then)."""
    monkeypatch.setattr(deadlines, "READER_STALL_S", STALL_S)


@pytest.fixture
async def id_model_server(short_reader_deadline: None) -> AsyncIterator[str]:
    """The model server app in-process on a fake engine making 0.2 s of audio per character."""
    app = create_app(lambda: IdEngine(seconds_per_char=0.2))
    async with serve_asgi(app, port=free_port(), **SERVER_OPTIONS) as http_url:
        address = http_url.removeprefix("http://")
        await wait_for_ping(address)
        yield address


async def stop_reading_after(address: str, request: bytes, marker: bytes) -> RawConnection:
    """Send ``request``, read until ``marker``, then read nothing more (the connection stays open)."""
    connection = RawConnection(address)
    await connection.__aenter__()
    await connection.send(request)
    async with asyncio.timeout(BOUND_S):
        await connection.read_until(marker)
    connection.stop_reading()
    return connection


async def test_reader_deadline_unit_an_endless_body_app_sees_its_send_fail_and_the_caller_leave() -> None:
    """The middleware alone, over a real socket, around a test double that writes as fast as it can."""
    seen: dict[str, Any] = {}
    done = asyncio.Event()

    async def endless_body_app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            while True:
                await send({"type": "http.response.body", "body": CHUNK, "more_body": True})
        except OSError as exc:
            seen["send"] = exc
        message: Message = await receive()
        seen["receive"] = message["type"]
        done.set()

    async with serve_asgi(ReaderDeadline(endless_body_app, timeout_s=STALL_S)) as url:
        address = url.removeprefix("http://")
        head = f"GET / HTTP/1.1\r\nHost: {address}\r\n\r\n".encode()
        connection = await stop_reading_after(address, head, b"\r\n\r\n")
        try:
            async with asyncio.timeout(BOUND_S):
                await done.wait()
        finally:
            connection.writer.transport.abort()
    assert isinstance(seen["send"], ReaderStalled), seen
    assert seen["receive"] == "http.disconnect", seen


async def test_reader_deadline_unit_a_caller_that_keeps_reading_is_never_cut() -> None:
    """The same test double, read the whole time (far slower than loopback, far faster than speech)."""
    sent = 0

    async def finite_body_app(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal sent
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(160):  # 10 MiB: more than the socket buffers hold, so sends wait on the reader
            await send({"type": "http.response.body", "body": CHUNK, "more_body": True})
            sent += len(CHUNK)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    received = 0
    async with (
        serve_asgi(ReaderDeadline(finite_body_app, timeout_s=STALL_S)) as url,
        httpx.AsyncClient(timeout=BOUND_S) as http,
        http.stream("GET", url) as response,
    ):
        async for chunk in response.aiter_raw(65536):
            received += len(chunk)
            await asyncio.sleep(0.01)  # a reader that takes its time between reads
    assert received == sent == 160 * len(CHUNK)


async def test_a_post_stream_nobody_reads_is_cancelled_and_the_server_serves_the_next(
    id_model_server: str,
) -> None:
    address = id_model_server
    before = await stats(address)
    body = Invocation(SynthesizeRequest(FOUR_SENTENCES * 10), "pcm").to_body()  # ~10 min of audio
    request = post_head("/invocations", address, len(body)) + body
    connection = await stop_reading_after(address, request, b"\r\n\r\n")
    try:
        settled = await wait_for_stats(
            address, lambda s: idle(s) and s["requests_cancelled"] > before["requests_cancelled"], BOUND_S
        )
        dropped = await let_go(connection.writer.get_extra_info("socket"), BOUND_S)
    finally:
        connection.writer.transport.abort()
    assert settled["requests_completed"] == before["requests_completed"], (before, settled)
    assert dropped == "close"  # reset by the server: its unsent audio is not held for a reader that left
    async with httpx.AsyncClient(timeout=BOUND_S) as http:
        response = await http.post(f"http://{address}/invocations", json={"text": "Still here."})
    assert response.status_code == 200 and len(response.content) > 0


async def test_an_agent_turn_nobody_reads_stops_the_model_and_the_speech_and_the_next_is_spoken(
    id_model_server: str,
) -> None:
    """The real agent app (SSE, base64 PCM) in front of the fake engine, its model writing a long answer
    slowly: the reader deadline fires the turn's hang-up, so the model stops writing, the speech stops,
    the turn ends, and the next turn is spoken."""
    models = [ScriptedModel(FOUR_SENTENCES * 4, tokens_per_s=20), ScriptedModel("Otters hold hands.")]
    made = iter(models)

    async with agent_app(f"ws://{id_model_server}", lambda: next(made)) as url:
        address = url.removeprefix("http://")
        before = await stats(id_model_server)
        body = json.dumps({"prompt": "Tell me about otters.", "mode": "bidi", "format": "pcm"}).encode()
        request = post_head("/invocations", address, len(body)) + body
        connection = await stop_reading_after(address, request, b'"audio_chunk"')
        try:
            async with httpx.AsyncClient(timeout=BOUND_S) as http:
                assert await agent_status(url, http) == "Healthy"  # no turn runs any more
            settled = await wait_for_stats(id_model_server, idle, BOUND_S)
        finally:
            connection.writer.transport.abort()
        first = models[0]
        assert first.stopped_early and not first.finished, vars(first)
        assert first.tokens_sent < len(first.tokens), (first.tokens_sent, len(first.tokens))
        assert settled["requests_completed"] - before["requests_completed"] < 16, (before, settled)
        next_turn = await run_turn(url, "And now?", "bidi")
    kinds = [timed.event["type"] for timed in next_turn.events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end", kinds
    assert "speech_error" not in kinds and "error" not in kinds, next_turn.summary()["errors"]
    assert next_turn.text == "Otters hold hands." and next_turn.audio_s > 0
