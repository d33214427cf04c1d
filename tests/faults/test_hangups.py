"""A caller who hangs up costs nothing; the real servers over real sockets.

Each hang-up is made with a raw TCP client (:mod:`tests.faults.raw_http`) that leaves the way real
callers do: a closed tab (FIN) or a dropped connection (reset), after the first ``audio_chunk`` or the
first ``text_delta``. What must follow, read from the REAL model server's ``/stats`` (onnx engine):
no request of the turn completes after the hang-up (at most the one in flight when it was noticed),
the turn's open requests count as cancelled, the server goes idle, the model stopped writing, and the
next turn is spoken in full. The bounds are on counters and states; the waits for them are generous
(a loaded 2-core machine), never timed asserts.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from agentcore_app.local.client import run_turn
from strands_kokoro.protocol import WS_PATH, Invocation, SynthesizeRequest
from tests.faults.agent_app_process import (
    LONG_ANSWER,
    SHORT_ANSWER,
    agent_app_process,
    agent_status,
    recorded,
)
from tests.faults.raw_http import RawConnection, post_head
from tests.model_server_process import RunningServer
from tests.scripted_model import FOUR_SENTENCES
from tests.tts_container.server_harness import dumps, idle, stats, wait_for_stats

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]

SETTLE_S = 60.0  # how long the server may take to settle after a hang-up (a bound, not a measurement)


def address_of(url: str) -> str:
    return url.removeprefix("http://").removeprefix("ws://")


async def hang_up(agent_url: str, after: bytes, how: str) -> None:
    """POST a turn, read its SSE until ``after`` appears, then leave: ``close`` (FIN) or ``reset``."""
    body = json.dumps({"prompt": "Tell me about otters.", "mode": "bidi"}).encode()
    address = address_of(agent_url)
    async with RawConnection(address) as connection:
        await connection.send(post_head("/invocations", address, len(body)) + body)
        async with asyncio.timeout(300):
            await connection.read_until(after)
        if how == "reset":
            connection.reset()


@pytest.mark.parametrize(
    ("scheme", "after", "how"),
    [
        ("ws", b'"audio_chunk"', "close"),
        ("ws", b'"text_delta"', "reset"),
        ("http", b'"audio_chunk"', "reset"),
    ],
)
async def test_a_hang_up_stops_the_turn_at_the_model_server_and_the_next_turn_is_spoken(
    model_server: RunningServer, tmp_path: Path, scheme: str, after: bytes, how: str
) -> None:
    speech = model_server.ws_url if scheme == "ws" else model_server.http_url
    speech_stats = address_of(model_server.http_url)
    record = tmp_path / "models.jsonl"
    await wait_for_stats(speech_stats, idle, timeout_s=SETTLE_S)  # nothing left over from other tests
    with agent_app_process(speech, record) as url:
        async with httpx.AsyncClient(timeout=300) as http:
            before = await stats(speech_stats)
            await hang_up(url, after, how)
            at_hang_up = await stats(speech_stats)
            settled = await wait_for_stats(speech_stats, idle, timeout_s=SETTLE_S)
            assert await agent_status(url, http) == "Healthy"  # the turn ended
            # The model server: no request of the turn completed after the hang-up was seen (the one in
            # flight, at most, had just finished), no engine call but the one running then, and what
            # was open counts as cancelled.
            work = (at_hang_up, settled)
            assert settled["requests_completed"] - at_hang_up["requests_completed"] <= 1, work
            assert settled["inference_completed"] - at_hang_up["inference_completed"] <= 2, work
            if scheme == "ws" and after == b'"audio_chunk"':
                # The bidirectional session always has the turn's next requests queued by then; over
                # POST, one request at a time, the hang-up may fall between two (nothing to cancel).
                assert settled["requests_cancelled"] > before["requests_cancelled"], (before, settled)
            # The LLM stopped writing: its call was cancelled before its last token.
            [hung_up] = recorded(record)
            assert hung_up["answer"] == LONG_ANSWER[:40] and hung_up["stopped_early"], hung_up
            assert not hung_up["finished"] and hung_up["tokens_sent"] < hung_up["tokens"], hung_up
            # The next turn is spoken in full.
            next_turn = await run_turn(url, "And otters?", "bidi", http_client=http)
    kinds = [timed.event["type"] for timed in next_turn.events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end", kinds
    assert "speech_error" not in kinds and "error" not in kinds, next_turn.summary()["errors"]
    assert next_turn.text == SHORT_ANSWER and next_turn.audio_s > 0


async def tool_started(record: Path) -> None:
    """Until the agent app's slow tool has noted that it runs (its process writes the record)."""
    while True:
        if recorded(record, "tool"):
            return
        await asyncio.sleep(0.05)


async def test_a_hang_up_during_a_silent_tool_ends_the_turn_and_cancels_the_tool(
    model_server: RunningServer, tmp_path: Path
) -> None:
    """No event flows while the tool runs (filler off): the SDK alone would notice only when it returns."""
    record = tmp_path / "models.jsonl"
    with agent_app_process(model_server.ws_url, record, first="tool") as url:
        address = address_of(url)
        body = json.dumps({"prompt": "Look it up.", "mode": "bidi"}).encode()
        async with RawConnection(address) as connection:
            await connection.send(post_head("/invocations", address, len(body)) + body)
            async with asyncio.timeout(300):
                await connection.read_until(b'"sentence_complete"')  # what was said before the tool
                await tool_started(record)
            connection.reset()
        async with httpx.AsyncClient(timeout=60) as http:
            assert await agent_status(url, http) == "Healthy"  # well before the tool's two minutes
    assert [line["tool"] for line in recorded(record, "tool")] == ["started", "cancelled"]
    assert len(recorded(record)) == 1  # the model was never called again after the tool


async def test_a_hang_up_of_a_post_stream_cancels_it_at_the_model_server(model_server: RunningServer) -> None:
    """POST /invocations on the model server itself: leave after the first audio bytes (a reset)."""
    address = address_of(model_server.http_url)
    await wait_for_stats(address, idle, timeout_s=SETTLE_S)
    body = Invocation(SynthesizeRequest(LONG_ANSWER), "pcm").to_body()
    before = await stats(address)
    async with RawConnection(address) as connection:
        await connection.send(post_head("/invocations", address, len(body)) + body)
        async with asyncio.timeout(300):
            await connection.read_until(b"\r\n\r\n")  # the status line comes with the first audio
        connection.reset()
    at_hang_up = await stats(address)
    settled = await wait_for_stats(address, idle, timeout_s=SETTLE_S)
    assert settled["requests_cancelled"] == before["requests_cancelled"] + 1, (before, settled)
    assert settled["requests_completed"] == before["requests_completed"]
    # 16 sentences are 16 engine calls or more; after the hang-up, at most the one running.
    assert settled["inference_completed"] - at_hang_up["inference_completed"] <= 1, (at_hang_up, settled)


async def test_a_ws_client_that_vanishes_with_requests_queued_cancels_them_all(
    model_server: RunningServer,
) -> None:
    """A bidirectional session dropped (no close frame, a reset) with 6 requests queued."""
    address = address_of(model_server.http_url)
    await wait_for_stats(address, idle, timeout_s=SETTLE_S)
    before = await stats(address)
    ws = await connect(model_server.ws_url + WS_PATH)
    try:
        for index in range(6):
            await ws.send(dumps(text=FOUR_SENTENCES, request_id=f"r{index}"))
        async with asyncio.timeout(300):
            while not isinstance(await ws.recv(), bytes):  # the first audio: work is under way
                pass
    finally:
        ws.transport.abort()  # vanish: no close frame, no FIN handshake
    at_hang_up = await stats(address)
    settled = await wait_for_stats(address, idle, timeout_s=SETTLE_S)
    assert settled["requests_cancelled"] - before["requests_cancelled"] >= 5, (before, settled)
    assert settled["requests_completed"] - at_hang_up["requests_completed"] <= 1
    assert settled["inference_completed"] - at_hang_up["inference_completed"] <= 1, (at_hang_up, settled)
