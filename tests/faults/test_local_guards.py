"""A locally bound server refuses browser requests from origins it does not serve.

What a hostile page can do, each as a real request to a real server on 127.0.0.1: a ``no-cors`` POST
(``Content-Type: text/plain``), a DNS-rebound ``Host``, a foreign ``Origin``, a WebSocket from any page.
Each is refused with a coded error before any work starts; the callers that must keep working (the
Python clients and SageMaker, which send no ``Origin``; the player page on its own origin; local dev
pages; AgentCore's callers on a non-loopback address) are checked beside them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from agentcore_app.app import create_app as create_agent_app
from agentcore_app.app import server_settings as agent_server_settings
from agentcore_app.local.player import with_page
from agentcore_app.local.stack import free_port, serve_asgi
from strands_kokoro.protocol import WS_PATH
from tests.faults.id_engine import IdEngine, expected_pcm
from tests.model_server_process import RunningServer, running_app
from tests.scripted_model import ScriptedModel
from tests.tts_container.server_harness import dumps, open_ws
from tts_container import __main__ as model_server_main
from tts_container.app import create_app
from tts_container.routes.local_guard import LocalRequestGuard

pytestmark = pytest.mark.anyio

JSON = {"content-type": "application/json"}
BODY = json.dumps({"text": "Hi."})
ANSWER = "Hello there."


# ------------------------------------------------------------------------------------ model server


async def ws_refusal(url: str, origin: str) -> tuple[int, dict[str, Any]]:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, origin=origin):  # type: ignore[arg-type]
            pass
    response = refused.value.response
    return response.status_code, json.loads(response.body or b"{}")


async def test_model_server_ws_refuses_every_origin_unless_allowed() -> None:
    app = create_app(IdEngine, allowed_origins=["https://studio.example"])
    async with running_app(app) as address:
        url = f"ws://{address}{WS_PATH}"
        for origin in ("http://evil.example", "http://localhost:5173", f"http://{address}", "null"):
            status, error = await ws_refusal(url, origin)
            assert (status, error["code"]) == (403, "origin_not_allowed"), origin
        allowed: tuple[str | None, ...] = ("https://studio.example", None)  # None: SageMaker, Python clients
        for allowed_origin in allowed:
            async with open_ws(url, origin=allowed_origin) as ws:  # type: ignore[arg-type]
                await ws.send(dumps(text="Hi.", request_id="ok"))
                frames = [await ws.recv() for _ in range(3)]
            assert frames[1] == expected_pcm("Hi.") and '"synthesis_complete"' in str(frames[2])


async def test_the_real_model_server_refuses_a_browser_websocket(model_server: RunningServer) -> None:
    status, error = await ws_refusal(model_server.ws_url + WS_PATH, "http://evil.example")
    assert (status, error["code"]) == (403, "origin_not_allowed")


async def test_allow_origin_on_the_command_line_reaches_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m tts_container --allow-origin ...``: main() builds the app the options describe."""
    served: dict[str, Any] = {}
    monkeypatch.setattr(model_server_main, "_load", lambda engine, threads, max_batch=None: IdEngine())
    monkeypatch.setattr(model_server_main.uvicorn, "run", lambda app, **options: served.update(app=app))
    model_server_main.main(["--allow-origin", "https://a.example", "--allow-origin", "https://b.example/"])
    async with running_app(served["app"]) as address:
        url = f"ws://{address}{WS_PATH}"
        async with open_ws(url, origin="https://b.example") as ws:  # type: ignore[arg-type]
            await ws.send(dumps(text="Hi."))
            assert '"synthesis_start"' in str(await ws.recv())
        assert (await ws_refusal(url, "https://c.example"))[0] == 403


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"content-type": "text/plain"}, 415, "bad_content_type"),  # a cross-site no-cors fetch
        ({}, 415, "bad_content_type"),
        ({"content-type": "application/x-www-form-urlencoded"}, 415, "bad_content_type"),
        ({**JSON, "host": "attacker.example"}, 421, "host_not_allowed"),  # DNS rebinding
        ({**JSON, "host": "127.0.0.1.attacker.example:8080"}, 421, "host_not_allowed"),
        ({**JSON, "origin": "http://evil.example"}, 403, "origin_not_allowed"),
    ],
)
async def test_model_server_post_refuses_browser_tricks_on_loopback(
    headers: dict[str, str], status: int, code: str
) -> None:
    engine = IdEngine()
    async with running_app(create_app(lambda: engine)) as address, httpx.AsyncClient() as client:
        made = engine.segments_made
        refused = await client.post(f"http://{address}/invocations", content=BODY, headers=headers)
        assert (refused.status_code, refused.json()["code"]) == (status, code)
        assert engine.segments_made == made  # nothing was synthesized
        port = address.rpartition(":")[2]
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
            ok = await client.post(
                f"http://{address}/invocations",
                content=BODY,
                headers={"content-type": "application/json; charset=utf-8", "host": host},
            )
            assert ok.status_code == 200 and ok.content == expected_pcm("Hi."), host


async def test_model_server_post_checks_only_apply_on_loopback() -> None:
    """In a container the server binds 0.0.0.0 and its callers arrive on the network address."""

    async def reached(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"reached"})

    transport = httpx.ASGITransport(app=LocalRequestGuard(reached))
    async with httpx.AsyncClient(transport=transport, base_url="http://10.0.3.7:8080") as client:
        answer = await client.post("/invocations", content=BODY, headers={"content-type": "text/plain"})
    assert answer.text == "reached"


# --------------------------------------------------------------------------------------- agent app


@asynccontextmanager
async def agent_url(*, page: bool = False, cors_origins: tuple[str, ...] = ()) -> AsyncIterator[str]:
    """The agent app on 127.0.0.1 (with the player page when ``page``); speech points at nothing."""
    app = create_agent_app(
        speech_endpoint=f"ws://127.0.0.1:{free_port()}",
        model=lambda: ScriptedModel(ANSWER, tokens_per_s=500),
        speech_options={"reconnect_attempts": 0},
    )
    async with serve_asgi(with_page(app, cors_origins=cors_origins) if page else app) as url:
        yield url


def sse_events(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(part.removeprefix("data: ")) for part in body.decode().split("\n\n") if part]


async def post_turn(url: str, headers: dict[str, str]) -> tuple[int, list[dict[str, Any]]]:
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.post(
            url + "/invocations", content=json.dumps({"prompt": "hi"}), headers=headers
        )
    return response.status_code, sse_events(response.content)


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"content-type": "text/plain"}, 415, "bad_content_type"),  # fetch(url, {mode: "no-cors"})
        (
            {"content-type": "text/plain;charset=UTF-8", "origin": "http://localhost:5173"},
            415,
            "bad_content_type",
        ),
        ({}, 415, "bad_content_type"),
        ({"content-type": "multipart/form-data; boundary=x"}, 415, "bad_content_type"),
        ({**JSON, "host": "rebound.attacker.example"}, 421, "host_not_allowed"),
        ({**JSON, "origin": "http://evil.example"}, 403, "origin_not_allowed"),
        ({**JSON, "origin": "null"}, 403, "origin_not_allowed"),  # sandboxed frames, file:// pages
        ({**JSON, "origin": "http://127.0.0.1.evil.example"}, 403, "origin_not_allowed"),
    ],
)
async def test_agent_app_refuses_cross_site_requests_before_any_turn(
    headers: dict[str, str], status: int, code: str
) -> None:
    async with agent_url() as url:
        got_status, events = await post_turn(url, headers)
        async with httpx.AsyncClient() as client:
            assert (await client.get(url + "/ping")).json()["status"] == "Healthy"  # no turn ran
    assert got_status == status
    assert [(e["type"], e["code"]) for e in events] == [("error", code)]


def assert_turn_ran(status: int, events: list[dict[str, Any]]) -> None:
    assert status == 200
    kinds = [e["type"] for e in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end" and "error" not in kinds
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == ANSWER


async def test_agent_app_serves_programs_and_local_pages() -> None:
    async with agent_url() as url:
        port = url.rpartition(":")[2]
        for headers in (
            JSON,  # a program (the demo client, curl, the tests): no Origin
            {**JSON, "origin": "http://localhost:5173"},  # a local dev page, as CORS allows
            {**JSON, "origin": url},  # same origin
            {"content-type": "application/json; charset=utf-8", "host": f"localhost:{port}"},
            {**JSON, "host": f"[::1]:{port}"},
        ):
            assert_turn_ran(*await post_turn(url, headers))


async def test_agent_app_with_the_player_page_serves_its_page_and_named_origins() -> None:
    async with agent_url(page=True, cors_origins=("https://studio.example",)) as url:
        assert_turn_ran(*await post_turn(url, {**JSON, "origin": url}))  # the player page itself
        assert_turn_ran(*await post_turn(url, {**JSON, "origin": "https://studio.example"}))
        status, events = await post_turn(url, {**JSON, "origin": "https://other.example"})
        assert (status, events[0]["code"]) == (403, "origin_not_allowed")
        status, events = await post_turn(url, {"content-type": "text/plain", "origin": url})
        assert (status, events[0]["code"]) == (415, "bad_content_type")


async def test_agentcore_callers_off_loopback_are_not_judged() -> None:
    """AgentCore's runtime reaches the container on its network address: the guard stays out of it."""
    app = create_agent_app(
        speech_endpoint=f"ws://127.0.0.1:{free_port()}",
        model=lambda: ScriptedModel(ANSWER, tokens_per_s=500),
        speech_options={"reconnect_attempts": 0},
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://169.254.1.9:8080", timeout=60
    ) as client:
        response = await client.post(
            "/invocations",
            content=json.dumps({"prompt": "hi"}),
            headers={"content-type": "text/plain", "origin": "https://agentcore.example"},
        )
    assert_turn_ran(response.status_code, sse_events(response.content))


async def test_two_host_headers_are_refused_by_both_servers_whichever_comes_first() -> None:
    """RFC 9112 §3.2: a request with two Host headers is a 400. A blind fault battery found the first one
    winning (a loopback Host, then the attacker's, was served)."""
    from tests.faults.raw_http import RawConnection

    async def answer(
        address: str, path: str, body: bytes, hosts: tuple[str, str]
    ) -> tuple[int | None, bytes]:
        head = [f"POST {path} HTTP/1.1", *(f"Host: {h}" for h in hosts), "Content-Type: application/json"]
        head += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
        async with RawConnection(address) as connection:
            await connection.send("\r\n".join(head).encode() + body)
            got = await connection.answer(60)
        return got.status, got.body

    engine = IdEngine()
    async with running_app(create_app(lambda: engine)) as model, agent_url() as agent:
        agent_address = agent.removeprefix("http://")
        turn = json.dumps({"prompt": "Hi.", "mode": "bidi"}).encode()
        for address, path, body in (
            (model, "/invocations", BODY.encode()),
            (agent_address, "/invocations", turn),
        ):
            for hosts in ((address, "evil.example"), ("evil.example", address)):
                status, text = await answer(address, path, body, hosts)
                assert status == 400 and b"duplicate_host" in text, (address, hosts, status, text[:200])


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_a_refused_handshake_is_answered_without_a_server_error_in_the_log() -> None:
    """uvicorn's own WebSocket protocol logged "ASGI callable returned without completing handshake"
    (ERROR) after every refusal (a blind fault battery counted one per probe); ours counts the refusal.
    uvicorn configures its loggers when it starts (they do not propagate), so the records are read from
    its logger once it runs."""
    logger, seen = logging.getLogger("uvicorn.error"), _Records()
    async with running_app(create_app(lambda: IdEngine())) as address:
        logger.addHandler(seen)
        try:
            status, body = await ws_refusal(f"ws://{address}{WS_PATH}", "http://evil.example")
            async with open_ws(f"ws://{address}{WS_PATH}") as ws:  # a caller without an Origin is served
                await ws.send(dumps(text="Hi.", request_id="ok"))
                await ws.recv()
        finally:
            logger.removeHandler(seen)
    assert (status, body["code"]) == (403, "origin_not_allowed")
    errors = [r.getMessage() for r in seen.records if r.levelno >= logging.ERROR]
    assert errors == [], errors


async def _send_text_that_is_not_utf8(url: str) -> int | None:
    """A text frame whose payload is not UTF-8 (the client library would refuse to write one: the frame
    goes through its protocol object); the close code the server answers."""
    async with connect(url) as ws:
        async with ws.send_context():
            ws.protocol.send_text(b"\xc3\x28\xa0\xa1")
        with pytest.raises(ConnectionClosed):
            async with asyncio.timeout(10):
                while True:  # the model server's session_start may come first
                    await ws.recv()
    return ws.protocol.close_rcvd.code if ws.protocol.close_rcvd else None


async def test_a_text_frame_that_is_not_utf8_is_closed_1007_without_a_server_error_in_the_log() -> None:
    """uvicorn logged a traceback at ERROR for each such frame (a blind fault battery): any client could
    write server errors into the log at will. Both servers' protocol closes it 1007 and logs INFO."""
    logger, seen = logging.getLogger("uvicorn.error"), _Records()
    agent = create_agent_app(
        speech_endpoint=f"ws://127.0.0.1:{free_port()}",
        model=lambda: ScriptedModel(ANSWER, tokens_per_s=500),
        speech_options={"reconnect_attempts": 0},
    )
    async with (
        running_app(create_app(lambda: IdEngine())) as address,
        serve_asgi(agent, **agent_server_settings()) as agent_http,
    ):
        logger.addHandler(seen)
        try:
            codes = [
                await _send_text_that_is_not_utf8(f"ws://{address}{WS_PATH}"),
                await _send_text_that_is_not_utf8(agent_http.replace("http://", "ws://") + "/ws"),
            ]
            async with open_ws(f"ws://{address}{WS_PATH}") as ws:  # the next caller is served
                await ws.send(dumps(text="Hi.", request_id="ok"))
                await ws.recv()
        finally:
            logger.removeHandler(seen)
    assert codes == [1007, 1007]
    errors = [r.getMessage() for r in seen.records if r.levelno >= logging.ERROR]
    assert errors == [], errors


async def test_a_post_whose_caller_leaves_mid_body_leaves_no_server_error_in_the_log() -> None:
    """Starlette raised ClientDisconnect out of the model server's body read: "Exception in ASGI
    application" with a traceback (a blind fault battery). The caller is gone: nothing to answer."""
    logger, seen = logging.getLogger("uvicorn.error"), _Records()
    async with running_app(create_app(lambda: IdEngine())) as address:
        logger.addHandler(seen)
        try:
            host, port = address.rsplit(":", 1)
            _, writer = await asyncio.open_connection(host, int(port))
            head = f"POST /invocations HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n"
            writer.write(f"{head}Content-Length: 100\r\n\r\n".encode() + b'{"text":')
            await writer.drain()
            await asyncio.sleep(0.3)  # the app is reading the body
            writer.close()
            await asyncio.sleep(0.3)
            async with httpx.AsyncClient() as client:  # the next caller is served
                served = await client.post(f"http://{address}/invocations", json={"text": "Hi."})
        finally:
            logger.removeHandler(seen)
    assert served.status_code == 200 and served.content
    errors = [r.getMessage() for r in seen.records if r.levelno >= logging.ERROR]
    assert errors == [], errors


async def test_both_servers_answer_a_request_that_is_not_http_with_their_coded_400() -> None:
    from tests.faults.raw_http import RawConnection

    agent = create_agent_app(
        speech_endpoint=f"ws://127.0.0.1:{free_port()}",
        model=lambda: ScriptedModel(ANSWER, tokens_per_s=500),
        speech_options={"reconnect_attempts": 0},
    )
    bad_chunk = b"POST /invocations HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
    async with (
        running_app(create_app(lambda: IdEngine())) as model,
        serve_asgi(agent, **agent_server_settings()) as agent_http,
    ):
        answers = []
        for address in (model, agent_http.removeprefix("http://")):
            async with RawConnection(address) as connection:
                await connection.send(bad_chunk.replace(b"{host}", address.encode()))
                answers.append(await connection.answer(30))
    assert [a.status for a in answers] == [400, 400]
    assert b'"code": "bad_http"' in answers[0].body or b'"code":"bad_http"' in answers[0].body
    assert answers[1].body.startswith(b"data: ") and b"bad_http" in answers[1].body


async def test_both_servers_answer_an_unknown_path_or_method_with_a_code() -> None:
    """Starlette's 404 and 405 were plain text: the one answer of either server without a code (a
    blind fault battery). The model server's is its JSON error frame, the app's an SSE ``error``."""
    async with (
        running_app(create_app(lambda: IdEngine())) as model,
        agent_url() as agent,
        httpx.AsyncClient(timeout=30) as client,
    ):
        answers = [
            await client.get(f"http://{model}/nope"),
            await client.get(f"http://{model}/invocations"),
            await client.get(f"{agent}/nope"),
            await client.delete(f"{agent}/ping"),
        ]
    assert [a.status_code for a in answers] == [404, 405, 404, 405]
    assert [answers[0].json()["code"], answers[1].json()["code"]] == ["not_found", "method_not_allowed"]
    assert [sse_events(a.content)[0]["code"] for a in answers[2:]] == ["not_found", "method_not_allowed"]
    assert answers[1].headers["allow"] == "POST" and "GET" in answers[3].headers["allow"]
