"""``kokoro_serving``: the header deadline on both of uvicorn's HTTP protocols, the body deadline,
a taken port.

Real uvicorn on a real socket, with short deadlines (the real 10 s / 20 s are exercised against both
servers in ``tests/faults/test_silent_peers.py``): what only these tests can pin down is the timer's
life cycle, which a full server test would take minutes to walk through: re-armed for the next request
on a kept-alive connection, off once a connection became a WebSocket, the same on httptools (the model
server) and h11 (the agent app's image).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from websockets.asyncio.client import connect

from agentcore_app.local.stack import serve_asgi
from kokoro_serving.deadlines import BodyDeadline, Refusal
from kokoro_serving.ports import unusable_port
from kokoro_serving.uvicorn_protocol import header_deadline_protocol
from tests.faults.raw_http import RawConnection, post_head

pytestmark = pytest.mark.anyio

SHORT_S = 0.5
WAIT_S = 30.0  # a bound on every wait, far above the deadlines
REFUSAL = Refusal(408, b"application/json", b'{"type":"error","code":"request_timeout"}')
BODY_REFUSAL = Refusal(408, b"application/json", b'{"type":"error","code":"body_timeout"}')


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse((await request.body()).decode())


async def ws_echo(websocket: WebSocket) -> None:
    await websocket.accept()
    await websocket.send_text(await websocket.receive_text())
    await websocket.close()


def app() -> Starlette:
    return Starlette(
        routes=[Route("/echo", echo, methods=["POST"]), WebSocketRoute("/ws", ws_echo)],
        middleware=[Middleware(BodyDeadline, refusal=BODY_REFUSAL, timeout_s=SHORT_S)],
    )


def post(address: str, body: bytes) -> bytes:
    return post_head("/echo", address, len(body)) + body


@pytest.mark.parametrize("base", [HttpToolsProtocol, H11Protocol], ids=["httptools", "h11"])
async def test_the_header_deadline_is_rearmed_for_the_next_request_and_off_for_a_websocket(
    base: type[Any],
) -> None:
    protocol = header_deadline_protocol(REFUSAL, SHORT_S, base=base)
    async with serve_asgi(app(), http=protocol, timeout_keep_alive=WAIT_S) as url:
        address = url.removeprefix("http://")
        async with RawConnection(address) as connection, asyncio.timeout(WAIT_S):
            # A first request, on time, is answered as usual.
            await connection.send(post(address, b"first"))
            first = await connection.read_until(b"first")
            assert first.startswith(b"HTTP/1.1 200")
            # The next request on the same connection stalls in its headers: 408, then closed.
            await connection.send(b"POST /echo HTTP/1.1\r\nHost: " + address.encode())
            answer = await connection.answer(WAIT_S)
        assert answer.closed and answer.status == 408 and b"request_timeout" in answer.body
        # A WebSocket outlives the deadline: the timer went off with the upgrade.
        async with connect(f"ws://{address}/ws") as ws:
            await asyncio.sleep(3 * SHORT_S)
            await ws.send("still here")
            assert await asyncio.wait_for(ws.recv(), WAIT_S) == "still here"


async def test_a_silent_connection_gets_the_408_without_a_request() -> None:
    protocol = header_deadline_protocol(REFUSAL, SHORT_S)
    async with (
        serve_asgi(app(), http=protocol) as url,
        RawConnection(url.removeprefix("http://")) as connection,
    ):
        answer = await connection.answer(WAIT_S)
    assert answer.closed and answer.status == 408


async def test_the_body_deadline_answers_a_stalled_body_and_lets_a_whole_one_through() -> None:
    async with serve_asgi(app()) as url:
        address = url.removeprefix("http://")
        async with RawConnection(address) as connection:
            await connection.send(post_head("/echo", address, 100) + b"only part")
            stalled = await connection.answer(WAIT_S)
        async with RawConnection(address) as connection:
            await connection.send(post(address, b"whole"))
            async with asyncio.timeout(WAIT_S):
                whole = await connection.read_until(b"whole")
    assert stalled.closed and stalled.status == 408 and b"body_timeout" in stalled.body
    assert whole.startswith(b"HTTP/1.1 200")


NOT_HTTP = Refusal(400, b"application/json", b'{"type":"error","code":"bad_http"}')


@pytest.mark.parametrize("base", [HttpToolsProtocol, H11Protocol], ids=["httptools", "h11"])
@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nFoo: a\x00b\r\nContent-Length: 0\r\n\r\n",  # a NUL in a header
    ],
    ids=["chunk-size", "negative-length", "nul-in-header"],
)
async def test_a_request_the_parser_refuses_gets_the_servers_coded_400(
    base: type[Any], request_bytes: bytes
) -> None:
    """uvicorn answered these with a plain-text "Invalid HTTP request received." (a blind fault battery):
    the one answer of either server without a code."""
    protocol = header_deadline_protocol(REFUSAL, WAIT_S, malformed=NOT_HTTP, base=base)
    async with (
        serve_asgi(app(), http=protocol) as url,
        RawConnection(url.removeprefix("http://")) as connection,
    ):
        await connection.send(request_bytes)
        answer = await connection.answer(WAIT_S)
    assert answer.closed and answer.status == 400 and b'"code":"bad_http"' in answer.body, answer


def test_a_taken_port_is_named_with_the_reason_and_a_free_one_is_not() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert unusable_port("127.0.0.1", port) == f"cannot serve on 127.0.0.1:{port}: Address already in use"
    assert unusable_port("127.0.0.1", port) is None  # released
    assert unusable_port("127.0.0.1", 0) is None  # the OS picks a free one
