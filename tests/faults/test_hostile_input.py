"""Malformed or hostile client input gets a small, coded answer, and the session or response goes on.

Huge request ids, integers past Python's parsing limit, lone surrogates, ids no HTTP header can carry:
each is answered with a stable code (or served), never an echo of the input, a dropped connection or a
dead session. Against the REAL model server (``model_server``) or an in-process server with
:class:`~tests.faults.id_engine.IdEngine` where only the wire matters.
"""

from __future__ import annotations

import json

import httpx
import pytest

from strands_kokoro.protocol import WS_PATH, control_object
from tests.faults.id_engine import IdEngine, expected_pcm
from tests.faults.wire import read_transcript
from tests.model_server_process import RunningServer, running_app
from tests.tts_container.server_harness import dumps, open_ws
from tts_container.app import create_app

pytestmark = pytest.mark.anyio

BIG_INT = "1" + "0" * 4_300  # 4,301 digits: past Python's int-parsing limit, json.loads raises ValueError
LONE_SURROGATE = "\\ud800"  # valid JSON (an escape), but no UTF-8 encoding exists for the string it makes


def ws_url(server: RunningServer) -> str:
    return server.ws_url + WS_PATH


async def test_errors_do_not_echo_a_60000_char_request_id_or_a_list(
    model_server: RunningServer,
) -> None:
    """Each error frame stays small whatever the client sent: an echoed id would cost its size per message."""
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(type="synthesize", text="hi", request_id="x" * 60_000))
        await ws.send(dumps(type="synthesize", text="hi", sample_rate=[1] * 20_000))
        await ws.send(dumps(type="synthesize", text="hi", voice="v" * 60_000))
        frames = [await ws.recv() for _ in range(3)]
    assert all(isinstance(f, str) and len(f) < 600 for f in frames), [len(f) for f in frames]
    errors = [json.loads(f) for f in frames]
    assert [e["code"] for e in errors] == ["bad_message", "bad_sample_rate", "unknown_voice"]
    assert all(e["request_id"] is None for e in errors)  # an over-long id is never kept


async def test_a_4301_digit_integer_over_ws_is_bad_json_and_nothing_queued_is_lost(
    model_server: RunningServer,
) -> None:
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(text="Before it.", request_id="before"))
        await ws.send('{"type": "synthesize", "text": "hi", "speed": ' + BIG_INT + "}")
        await ws.send(dumps(text="After it.", request_id="after"))
        transcript = await read_transcript(ws, ends=3)
    assert [e["code"] for e in transcript.errors()] == ["bad_json"]
    for request_id in ("before", "after"):
        assert transcript.end_of(request_id)["type"] == "synthesis_complete"
        assert transcript.pcm_of(request_id)


async def test_a_4301_digit_integer_over_post_is_a_coded_400(model_server: RunningServer) -> None:
    body = '{"text": "hi", "sample_rate": ' + BIG_INT + "}"
    async with httpx.AsyncClient(timeout=60) as client:
        refused = await client.post(
            model_server.http_url + "/invocations", content=body, headers={"content-type": "application/json"}
        )
    assert refused.status_code == 400 and refused.json()["code"] == "bad_json"


def test_the_clients_frame_parser_survives_a_4301_digit_integer() -> None:
    """The receiving side's classifier: not a control frame (never an exception in the receiver task)."""
    frame = '{"type": "synthesis_complete", "request_id": "r", "audio_ms": ' + BIG_INT + "}"
    assert control_object(frame) is None and control_object(frame.encode()) is None
    assert control_object("[" * 100_000 + "]" * 100_000) is None


async def test_unknown_type_keeps_the_request_id(model_server: RunningServer) -> None:
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(type="synthesise", text="Hi.", request_id="typo-1"))
        error = json.loads(await ws.recv())
    assert (error["code"], error["request_id"]) == ("unknown_type", "typo-1")


@pytest.mark.parametrize(
    "message",
    [
        '{"type": "synthesize", "text": "Hi.", "request_id": "' + LONE_SURROGATE + '"}',
        '{"type": "dance", "request_id": "' + LONE_SURROGATE + '"}',
    ],
    ids=["synthesize", "unknown_type"],
)
async def test_a_request_id_with_a_lone_surrogate_does_not_kill_the_session(message: str) -> None:
    async with running_app(create_app(IdEngine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(message)
        await ws.send(dumps(text="After it.", request_id="after"))
        transcript = await read_transcript(ws, ends=2, timeout_s=10)
    assert transcript.end_of("after")["type"] == "synthesis_complete"


@pytest.mark.parametrize("request_id", ["line\nbreak", "中文", "café", "x" * 128])
async def test_post_echoes_any_valid_request_id_without_breaking_the_response(request_id: str) -> None:
    """X-Request-Id carried the client's id verbatim: a newline or a non-Latin-1 character made the
    response fail (500, or a dropped connection) after the request was accepted."""
    async with running_app(create_app(IdEngine)) as address, httpx.AsyncClient() as client:
        response = await client.post(
            f"http://{address}/invocations", json={"text": "Hi.", "request_id": request_id}
        )
    assert response.status_code == 200 and response.content == expected_pcm("Hi.")
    assert response.headers["x-request-id"].isascii() and "\n" not in response.headers["x-request-id"]


async def test_post_sse_with_a_lone_surrogate_request_id_is_refused_or_served() -> None:
    body = '{"text": "Hi.", "format": "sse", "request_id": "' + LONE_SURROGATE + '"}'
    async with running_app(create_app(IdEngine)) as address, httpx.AsyncClient() as client:
        response = await client.post(
            f"http://{address}/invocations", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400 or response.text.rstrip().endswith("}")
