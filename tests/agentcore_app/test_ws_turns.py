"""The agent app's WebSocket ``/ws``: turns, binary audio, cancel, hang-up, bad messages and local guards.

Real model server (``model_server``), the real agent app on a free port (uvicorn), a real WebSocket
client. The LLM is ``ScriptedModel`` / ``HistoryScriptedModel`` (test doubles with known answers), so the
text and what the app remembered can be compared exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from agentcore_app import event_frames
from agentcore_app.app import create_app
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.local.stack import serve_asgi
from agentcore_app.local.ws_client import local_ws_url
from agentcore_app.runtime_session import SESSION_HEADER
from strands_kokoro.audio_encoding import decode_audio
from strands_kokoro.protocol import audio_ms
from tests.agentcore_app.history_model import HistoryScriptedModel, user_prompts
from tests.scripted_model import FOUR_SENTENCES, ScriptedModel
from tests.tts_container.server_harness import idle, wait_for_stats

if TYPE_CHECKING:
    from strands.models.model import Model

    from tests.model_server_process import RunningServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]

SESSION = "ws-test-conversation-0123456789abcdef0123"
TURN_TIMEOUT_S = 240.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.asynccontextmanager
async def app_url(speech: str, new_model: Callable[[], Model], state: Path) -> AsyncIterator[str]:
    app = create_app(
        speech_endpoint=speech, model=new_model, conversations=ConversationSettings(location=state)
    )
    async with serve_asgi(app) as url:
        yield url


async def read_turn(ws: ClientConnection) -> list[event_frames.ReadEvent]:
    """Every event of one turn request, through its ``turn_end`` (checked against the framing rules)."""
    reader = event_frames.FrameReader()
    found: list[event_frames.ReadEvent] = []
    async with asyncio.timeout(TURN_TIMEOUT_S):
        while True:
            read = reader.feed(await ws.recv())
            if read is None:
                continue
            found.append(read)
            if read.event["type"] == "turn_end":
                return found


def assert_one_turn(found: list[event_frames.ReadEvent], request_id: str, answer: str) -> bytes:
    """The frames of a completed turn; returns its audio bytes joined."""
    kinds = [r.event["type"] for r in found]
    assert kinds[0] == "agent_start" and kinds[-2:] == ["agent_end", "turn_end"], kinds
    assert {r.event["request_id"] for r in found} == {request_id}  # every frame names its request
    assert found[-1].event["status"] == "completed"
    assert "".join(r.event["text"] for r in found if r.event["type"] == "text_delta") == answer
    chunks = [r for r in found if r.event["type"] == "audio_chunk"]
    assert chunks and all(r.audio is not None and len(r.audio) == r.event["bytes"] for r in chunks)
    assert all("audio" not in r.event for r in chunks)  # the bytes came as a binary frame, not base64
    assert found[-2].event["chunks"] == len(chunks)
    return b"".join(r.audio or b"" for r in chunks)


async def test_two_turns_on_one_connection_opus_then_pcm_remembering_the_conversation(
    model_server: RunningServer, tmp_path: Path
) -> None:
    model = HistoryScriptedModel(lambda messages: f"Turn {len(user_prompts(messages))} of this conversation.")
    async with (
        app_url(model_server.ws_url, lambda: model, tmp_path) as url,
        connect(local_ws_url(url), additional_headers={SESSION_HEADER: SESSION}) as ws,
    ):
        await ws.send(event_frames.turn_request({"prompt": "One?", "format": "opus"}, "first"))
        await ws.send(event_frames.turn_request({"prompt": "Two?"}, "second"))  # queued behind the first
        first, second = await read_turn(ws), await read_turn(ws)
    opus = assert_one_turn(first, "first", "Turn 1 of this conversation.")
    pcm = assert_one_turn(second, "second", "Turn 2 of this conversation.")  # the app remembered turn 1
    assert opus[:4] == b"OggS" and {r.event["format"] for r in first if r.audio} == {"opus"}
    assert audio_ms(len(decode_audio(opus, "opus", 24_000)), 24_000) == pytest.approx(
        first[-2].event["audio_ms"], abs=1.0
    )
    assert {r.event["format"] for r in second if r.audio} == {"pcm_s16le"}
    assert audio_ms(len(pcm), 24_000) == pytest.approx(second[-2].event["audio_ms"], abs=0.2)
    assert len(opus) / first[-2].event["audio_ms"] < len(pcm) / second[-2].event["audio_ms"] / 8


async def test_bad_messages_get_coded_errors_and_the_connection_goes_on(
    model_server: RunningServer, tmp_path: Path
) -> None:
    async with (
        app_url(model_server.ws_url, lambda: ScriptedModel(answer="Still here."), tmp_path) as url,
        connect(local_ws_url(url)) as ws,
    ):
        answers = []
        for bad in ("{not json", b"\xff\xfe", "[1, 2]", '{"type": "dance"}', '{"type": "turn"}'):
            await ws.send(bad)
            answers.append(json.loads(await ws.recv()))
        refused_end = json.loads(await ws.recv())  # the last one was a turn request: it ends too
        await ws.send(event_frames.turn_request({"prompt": "Hi", "format": "flac"}, "f"))
        flac = [json.loads(await ws.recv()), json.loads(await ws.recv())]
        await ws.send(json.dumps({"prompt": "Hi", "request_id": "x" * 500}))
        long_id, long_end = json.loads(await ws.recv()), json.loads(await ws.recv())
        await ws.send('{"type": "turn", "prompt": "Hi", "request_id": "ok\\udbff"}')  # echoed: must encode
        surrogate_id, surrogate_end = json.loads(await ws.recv()), json.loads(await ws.recv())
        await ws.send(event_frames.turn_request({"prompt": "Are you there?"}, "ok"))
        spoken = await read_turn(ws)
    assert [a["code"] for a in answers] == [
        "bad_json",
        "audio_not_announced",  # a binary frame that is no JSON object is audio: no microphone is open
        "bad_payload",
        "unknown_type",
        "missing_prompt",
    ]
    assert all(a["type"] == "error" and a["message"] for a in answers)
    assert [a["request_id"] for a in answers[:4]] == [None] * 4
    assert refused_end["type"] == "turn_end" and refused_end["status"] == "refused"
    assert flac[0]["code"] == "bad_format" and flac[0]["request_id"] == "f"
    assert flac[1] == {"type": "turn_end", "request_id": "f", "status": "refused"}
    assert long_id["code"] == "bad_payload" and long_id["request_id"] is None
    assert long_end == {"type": "turn_end", "request_id": None, "status": "refused"}
    assert surrogate_id["code"] == "bad_utf8" and surrogate_id["request_id"] is None
    assert surrogate_end == {"type": "turn_end", "request_id": None, "status": "refused"}
    assert_one_turn(spoken, "ok", "Still here.")


async def test_a_fault_of_the_apps_own_is_answered_and_the_connection_goes_on(
    model_server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentcore_app import ws_turns
    from agentcore_app.payload import Turn, parse_turn

    def parse_turn_with_a_bug(payload: Any) -> Turn:  # a test double of a bug in the app
        if payload.get("prompt") == "BUG":
            raise RuntimeError("a bug in the app")
        return parse_turn(payload)

    monkeypatch.setattr(ws_turns, "parse_turn", parse_turn_with_a_bug)
    async with (
        app_url(model_server.ws_url, lambda: ScriptedModel(answer="Still here."), tmp_path) as url,
        connect(local_ws_url(url)) as ws,
    ):
        await ws.send(event_frames.turn_request({"prompt": "BUG"}, "bug"))
        fault = json.loads(await ws.recv())
        await ws.send(event_frames.turn_request({"prompt": "Are you there?"}, "ok"))
        spoken = await read_turn(ws)
    assert fault["type"] == "error" and fault["code"] == "internal_error" and "bug" not in fault["message"]
    assert_one_turn(spoken, "ok", "Still here.")


async def ping_status(url: str) -> str:
    async with httpx.AsyncClient(timeout=10) as http:
        return str((await http.get(url + "/ping")).json()["status"])


async def wait_turn_over(url: str, timeout_s: float = 30.0) -> float:
    """Seconds until the app reports no running turn (the SDK's task tracking)."""
    started = time.monotonic()
    async with asyncio.timeout(timeout_s):
        while True:
            if await ping_status(url) == "Healthy":
                return time.monotonic() - started
            await asyncio.sleep(0.1)


async def first_audio(ws: ClientConnection) -> None:
    reader = event_frames.FrameReader()
    async with asyncio.timeout(TURN_TIMEOUT_S):
        while (read := reader.feed(await ws.recv())) is None or read.event["type"] != "audio_chunk":
            pass


async def test_cancel_stops_the_turn_and_the_next_turn_runs_on_the_same_connection(
    model_server: RunningServer, tmp_path: Path
) -> None:
    slow = ScriptedModel(answer=FOUR_SENTENCES * 10, tokens_per_s=6.5)
    short = ScriptedModel(answer="Otters are back.", tokens_per_s=50)
    models = iter([slow, short])
    async with (
        app_url(model_server.ws_url, lambda: next(models), tmp_path) as url,
        connect(local_ws_url(url)) as ws,
    ):
        await ws.send(event_frames.turn_request({"prompt": "Tell me everything.", "format": "opus"}, "long"))
        await ws.send(event_frames.turn_request({"prompt": "Queued."}, "queued"))
        await first_audio(ws)
        assert await ping_status(url) == "HealthyBusy"
        await ws.send(event_frames.CANCEL)
        tail = await read_until(ws, "cancelled")
        ended_s = await wait_turn_over(url)
        await wait_for_stats(model_server.http_url.removeprefix("http://"), idle, timeout_s=30)
        await ws.send(event_frames.turn_request({"prompt": "Are they back?"}, "again"))
        again = await read_turn(ws)
    ends = [e for e in tail if e["type"] == "turn_end"]
    assert {(e["request_id"], e["status"]) for e in ends} == {("queued", "cancelled"), ("long", "cancelled")}
    assert tail[-1] == {"type": "cancelled", "dropped": 2}
    assert slow.stopped_early and not slow.finished
    assert_one_turn(again, "again", "Otters are back.")
    print(f"\nturn over {ended_s:.2f} s after the cancel was answered")


async def test_cancels_back_to_back_mid_turn_each_get_their_answer_in_order(
    model_server: RunningServer, tmp_path: Path
) -> None:
    """A blind fault battery sent three cancels at once mid-turn: one answer came back, two never."""
    slow = ScriptedModel(answer=FOUR_SENTENCES * 10, tokens_per_s=6.5)
    async with app_url(model_server.ws_url, lambda: slow, tmp_path) as url, connect(local_ws_url(url)) as ws:
        await ws.send(event_frames.turn_request({"prompt": "Tell me everything."}, "long"))
        await first_audio(ws)
        for _ in range(3):
            await ws.send(event_frames.CANCEL)
        seen = await read_until(ws, "cancelled")
        seen += await read_until(ws, "cancelled")
        seen += await read_until(ws, "cancelled")
    answers = [e for e in seen if e["type"] == "cancelled"]
    assert answers == [{"type": "cancelled", "dropped": n} for n in (1, 0, 0)], answers
    ends = [e for e in seen if e["type"] == "turn_end"]
    assert [(e["request_id"], e["status"]) for e in ends] == [("long", "cancelled")]


async def read_until(ws: ClientConnection, kind: str) -> list[dict[str, Any]]:
    reader = event_frames.FrameReader()
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(60):
        while True:
            read = reader.feed(await ws.recv())
            if read is not None:
                seen.append(read.event)
                if read.event["type"] == kind:
                    return seen


async def test_a_hang_up_mid_turn_cancels_the_turn(model_server: RunningServer, tmp_path: Path) -> None:
    slow = ScriptedModel(answer=FOUR_SENTENCES * 10, tokens_per_s=6.5)
    async with app_url(model_server.ws_url, lambda: slow, tmp_path) as url:
        async with connect(local_ws_url(url)) as ws:
            await ws.send(event_frames.turn_request({"prompt": "Tell me everything."}))
            await first_audio(ws)
        ended_s = await wait_turn_over(url)
        await wait_for_stats(model_server.http_url.removeprefix("http://"), idle, timeout_s=30)
    assert slow.stopped_early and not slow.finished
    print(f"\nturn over {ended_s:.2f} s after the hang-up")


@pytest.mark.parametrize(
    ("origin", "host", "status", "code"),
    [
        ("https://evil.example", None, 403, "origin_not_allowed"),
        (None, "rebound.example", 421, "host_not_allowed"),  # DNS rebinding: a foreign name, our address
    ],
)
async def test_local_guards_refuse_cross_site_handshakes(
    tmp_path: Path, origin: str | None, host: str | None, status: int, code: str
) -> None:
    async with app_url("ws://127.0.0.1:9", lambda: ScriptedModel(), tmp_path) as url:
        port = int(url.rsplit(":", 1)[1])
        target = local_ws_url(url) if host is None else f"ws://{host}:{port}/ws"
        headers = {} if origin is None else {"Origin": origin}
        with pytest.raises(InvalidStatus) as refused:
            async with connect(target, additional_headers=headers, host="127.0.0.1", port=port):
                pass
        # A local page (another port) may open it.
        async with connect(local_ws_url(url), additional_headers={"Origin": "http://localhost:5173"}) as ws:
            await ws.send('{"type": "dance"}')
            assert json.loads(await ws.recv())["code"] == "unknown_type"
    response = refused.value.response
    assert response.status_code == status
    assert json.loads(response.body)["code"] == code


async def test_a_bad_session_id_closes_the_connection_with_a_coded_error(tmp_path: Path) -> None:
    async with (
        app_url("ws://127.0.0.1:9", lambda: ScriptedModel(), tmp_path) as url,
        connect(f"{local_ws_url(url)}?{SESSION_HEADER}=short") as ws,
    ):
        refused = json.loads(await ws.recv())
        await ws.wait_closed()
    assert refused["code"] == "bad_session_id" and ws.close_code == 1008


async def test_the_python_client_runs_a_turn_over_the_socket_in_mp3(
    model_server: RunningServer, tmp_path: Path
) -> None:
    """``run_turn(..., transport="ws")``: what ``agent-infra demo --transport ws`` does to a local app."""
    from agentcore_app.local.client import run_turn

    model = ScriptedModel(answer="Over the socket.")
    async with app_url(model_server.ws_url, lambda: model, tmp_path) as url:
        record = await run_turn(url, "Hi?", "bidi", transport="ws", audio_format="mp3", session_id=SESSION)
    end = record.first("agent_end")
    assert record.text == "Over the socket." and end is not None
    assert record.audio_format == "mp3" and record.encoded[:2] == b"\xff\xf3"
    assert end.event["audio_ms"] <= record.audio_s * 1000 <= end.event["audio_ms"] + 120  # LAME's delay
    assert record.wire_bytes < len(record.pcm) / 4


async def test_turns_sent_at_once_are_one_running_and_four_waiting_the_rest_refused(
    model_server: RunningServer, tmp_path: Path
) -> None:
    """Fault battery 4 sent 7 turns before any had started: 4 were accepted, the README says one runs
    and up to 4 more wait. Now 5 are spoken in order and the other 2 refused ``too_many_turns``."""
    async with (
        app_url(model_server.ws_url, lambda: ScriptedModel(answer="Yes.", tokens_per_s=50), tmp_path) as url,
        connect(local_ws_url(url)) as ws,
    ):
        for index in range(7):
            await ws.send(event_frames.turn_request({"prompt": "Well?"}, f"t{index}"))
        reader = event_frames.FrameReader()
        ends: dict[str, str] = {}
        refusals: dict[str, str] = {}
        async with asyncio.timeout(TURN_TIMEOUT_S):
            while len(ends) < 7:
                read = reader.feed(await ws.recv())
                if read is None:
                    continue
                if read.event["type"] == "turn_end":
                    ends[read.event["request_id"]] = read.event["status"]
                elif read.event["type"] == "error":
                    refusals[read.event["request_id"]] = read.event["code"]
    assert ends == {f"t{i}": "completed" for i in range(5)} | {"t5": "refused", "t6": "refused"}
    assert refusals == {"t5": "too_many_turns", "t6": "too_many_turns"}
