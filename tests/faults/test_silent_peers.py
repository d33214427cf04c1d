"""Callers that go silent are answered (408, coded) or dropped within a bound.

Against the servers as they are started for real: the REAL model server (``python -m tts_container``, the
``model_server`` fixture) and the agent app in its own process (as ``python -m agentcore_app`` runs it).
Each stall is a raw TCP client (:mod:`tests.faults.raw_http`): a body that stops after 10 of 1000 bytes,
a body that drips a byte a second, headers that stop half-way (twenty at once), a connection that sends
nothing at all. Each must get the server's own coded 408 and a closed connection within its deadline
plus a generous margin, while the server goes on answering everyone else.

The WebSocket keep-alive (SageMaker's contract: pings answered, a peer that stops answering dropped) is
checked on an in-process server whose ping interval is shortened; the real 60 s would make a test wait
two minutes for the same code path.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from agentcore_app.local.client import run_turn
from agentcore_app.local.stack import free_port, serve_asgi
from kokoro_serving.deadlines import BODY_TIMEOUT_S, HEADER_TIMEOUT_S
from strands_kokoro.protocol import WS_PATH, ErrorCode, control_object
from tests.faults.agent_app_process import SHORT_ANSWER, agent_app_process, recorded
from tests.faults.id_engine import IdEngine
from tests.faults.raw_http import Answer, RawConnection, let_go, post_head
from tests.model_server_process import RunningServer, wait_for_ping
from tests.tts_container.server_harness import dumps, read_response, stats, wait_for_stats
from tts_container.__main__ import SERVER_OPTIONS
from tts_container.app import create_app

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.timeout(600)]
MARGIN_S = 30.0  # on top of a deadline: a loaded 2-core machine, never a measurement
SLOW_HEADERS = 20


async def stall_body(address: str, sent: bytes = b'{"text": "') -> Answer:
    """Announce a 1000-byte body, send a few bytes of it, then nothing."""
    async with RawConnection(address) as connection:
        await connection.send(post_head("/invocations", address, 1000) + sent)
        return await connection.answer(BODY_TIMEOUT_S + MARGIN_S)


async def drip_body(address: str) -> Answer:
    """A body that keeps arriving, one byte a second (an idle-only deadline would never fire)."""
    async with RawConnection(address) as connection:
        await connection.send(post_head("/invocations", address, 1000))

        async def drip() -> None:
            for _ in range(1000):
                await connection.send(b" ")
                await asyncio.sleep(1.0)

        dripping = asyncio.create_task(drip())
        try:
            return await connection.answer(BODY_TIMEOUT_S + MARGIN_S)
        finally:
            dripping.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):  # closed under it: expected
                await dripping


async def stall_headers(address: str, sent: bytes) -> Answer:
    async with RawConnection(address) as connection:
        if sent:
            await connection.send(sent)
        return await connection.answer(HEADER_TIMEOUT_S + MARGIN_S)


def timed_out(answer: Answer) -> dict[str, Any]:
    """The answer was the server's coded 408 and the connection closed; returns the error object."""
    assert answer.closed, f"still open after the deadline: {answer.data[:200]!r}"
    assert answer.status == 408, answer.data[:300]
    error = control_object(answer.body.removeprefix(b"data: ").strip())
    assert error is not None and error["code"] == ErrorCode.REQUEST_TIMEOUT, answer.body[:300]
    return error


async def every_stall(address: str) -> list[Answer]:
    """All the stalls at once: two bodies, twenty half-sent headers, one silent connection."""
    half_headers = f"POST /invocations HTTP/1.1\r\nHost: {address}\r\nContent-Ty".encode()
    return list(
        await asyncio.gather(
            stall_body(address),
            drip_body(address),
            *(stall_headers(address, half_headers) for _ in range(SLOW_HEADERS)),
            stall_headers(address, b""),
        )
    )


async def test_the_model_server_times_out_stalled_bodies_and_headers_and_serves_the_rest(
    model_server: RunningServer,
) -> None:
    address = model_server.http_url.removeprefix("http://")
    stalls = asyncio.create_task(every_stall(address))
    # While they stall, everyone else is served.
    async with httpx.AsyncClient(timeout=120) as http:
        await asyncio.sleep(1.0)
        ping = await http.get(f"http://{address}/ping")
        spoken = await http.post(f"http://{address}/invocations", json={"text": "Still here."})
        answers = await stalls
        after = await http.post(f"http://{address}/invocations", json={"text": "And after."})
    assert ping.status_code == 200 and spoken.status_code == 200 and spoken.content
    for answer in answers:
        error = timed_out(answer)
        assert error["type"] == "error" and error["message"]
    assert after.status_code == 200 and after.content
    current = await stats(address)
    assert current["inference_running"] == 0


async def test_the_agent_app_times_out_stalled_bodies_and_headers_and_the_next_turn_is_spoken(
    model_server: RunningServer, tmp_path: Path
) -> None:
    record = tmp_path / "models.jsonl"
    with agent_app_process(model_server.ws_url, record, first="short") as url:
        address = url.removeprefix("http://")
        answers = await every_stall(address)
        for answer in answers:
            error = timed_out(answer)  # one SSE error event, as every refusal of the app
            assert error["type"] == "error" and error["message"]
        async with httpx.AsyncClient(timeout=300) as http:
            turn = await run_turn(url, "Tell me about otters.", "bidi", http_client=http)
    kinds = [timed.event["type"] for timed in turn.events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end", kinds
    assert "error" not in kinds and "speech_error" not in kinds, turn.summary()["errors"]
    assert turn.text == SHORT_ANSWER and turn.audio_s > 0
    assert len(recorded(record)) == 1  # no stalled request ever reached the agent


# ------------------------------------------------------------------------------------ WebSocket


async def test_an_idle_session_that_answers_pings_stays_open_and_one_that_stops_is_dropped() -> None:
    """SageMaker's keep-alive: pings answered keep a session; a peer that stops answering is gone."""
    options = {**SERVER_OPTIONS, "ws_ping_interval": 0.2, "ws_ping_timeout": 0.5}
    app = create_app(lambda: IdEngine(delay_s=0.2))
    async with serve_asgi(app, port=free_port(), **options) as http_url:
        address = http_url.removeprefix("http://")
        await wait_for_ping(address)
        url = f"ws://{address}{WS_PATH}"
        async with connect(url, ping_interval=None) as idle_ws, connect(url, ping_interval=None) as mute_ws:
            for index in range(4):
                await mute_ws.send(dumps(text="A sentence. " * 20, request_id=f"m{index}"))
            while not isinstance(await mute_ws.recv(), bytes):  # its work is under way
                pass
            mute_socket = mute_ws.transport.get_extra_info("socket")
            mute_socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            mute_ws.transport.pause_reading()  # it no longer reads: the server's pings go unanswered
            # The server drops the mute one (its queued requests cancelled), and resets its connection
            # (whose unsent audio would otherwise hold it open for good) ...
            dropped = await wait_for_stats(address, lambda s: s["sessions_active"] == 1, timeout_s=60)
            assert dropped["requests_cancelled"] >= 3, dropped
            assert await let_go(mute_socket, timeout_s=60) in ("close", "close_wait")
            # ... while the idle one, which answered every ping meanwhile, is served as before.
            await idle_ws.send(dumps(text="Still here.", request_id="idle"))
            response = await read_response(idle_ws, timeout_s=60)
            mute_ws.transport.abort()
        assert response.end is not None and response.end["type"] == "synthesis_complete", response.end
        assert response.pcm


async def test_a_body_announced_over_the_limit_is_refused_at_once_not_after_the_deadline(
    model_server: RunningServer, tmp_path: Path
) -> None:
    """A blind fault battery sent ``Content-Length: 1000000000000`` and nothing: the body deadline (20 s)
    answered it. Announced over the limit, it is refused before anything is read (well inside the
    deadline: the bound here is half of it)."""
    record = tmp_path / "models.jsonl"
    with agent_app_process(model_server.ws_url, record, first="short") as agent:
        for address in (model_server.http_url.removeprefix("http://"), agent.removeprefix("http://")):
            async with RawConnection(address) as connection:
                await connection.send(post_head("/invocations", address, 10**12))
                answer = await connection.answer(BODY_TIMEOUT_S / 2)
            assert answer.status == 413, (address, answer.data[:200])
            assert b"too_large" in answer.body, answer.body


def upgrade_head(address: str, path: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: {address}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


async def test_a_websocket_handshake_too_large_to_parse_is_a_coded_refusal_not_a_held_connection(
    model_server: RunningServer, tmp_path: Path
) -> None:
    """Fault battery 4: a handshake whose request line is over the WebSocket parser's 8,192 bytes got no
    byte back and stayed open (75 s and counting) on both servers. It is refused with the server's own
    coded answer and closed at once (bound: half the header deadline); the WebSocket still serves."""
    record = tmp_path / "models.jsonl"
    with agent_app_process(model_server.ws_url, record, first="short") as agent:
        ends = {
            model_server.http_url.removeprefix("http://"): WS_PATH,
            agent.removeprefix("http://"): "/ws",
        }
        for address, path in ends.items():
            async with RawConnection(address) as connection:
                await connection.send(upgrade_head(address, f"{path}?x={'a' * 10_000}"))
                answer = await connection.answer(HEADER_TIMEOUT_S / 2)
            assert answer.closed and answer.status == 431, (address, answer.data[:200])
            error = control_object(answer.body.removeprefix(b"data: ").strip())
            assert error is not None and error["code"] == ErrorCode.BAD_HTTP, answer.body[:300]
        async with connect(model_server.ws_url + WS_PATH) as ws:
            await ws.send(dumps(text="Still here.", request_id="after"))
            response = await read_response(ws, timeout_s=60)
    assert response.end is not None and response.end["type"] == "synthesis_complete" and response.pcm
