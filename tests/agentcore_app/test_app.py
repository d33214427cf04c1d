"""The AgentCore app over real HTTP (uvicorn on a free port) against the real Kokoro model server.

Most turns use ``ScriptedModel`` (a test double with a known 4-sentence answer) so the assertions can be
exact; ``test_real_local_model_end_to_end_gets_audio`` runs the embedded SmolLM2 for real.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from httpx_sse import aconnect_sse
from strands.models.model import Model

from agentcore_app.local.client import invoke_http, payload_for, run_turn
from agentcore_app.local.stack import agent_app, free_port, wait_until_ready
from agentcore_app.local.turn_record import TurnRecord
from tests.scripted_model import FOUR_SENTENCES, ScriptedModel
from tests.tts_container.server_harness import idle, synthesizing, wait_for_stats

if TYPE_CHECKING:
    from tests.model_server_process import RunningServer


def dead_endpoint() -> str:
    return f"ws://127.0.0.1:{free_port()}"


async def _turns(
    speech_endpoint: str, model: str | Callable[[], Model], payloads: list[dict[str, Any]]
) -> list[TurnRecord]:
    async with agent_app(speech_endpoint, model) as url, httpx.AsyncClient(timeout=120) as http:
        return [await run_turn(url, p["prompt"], p.get("mode", "bidi"), http_client=http) for p in payloads]


async def _raw_events(
    speech_endpoint: str, bodies: list[bytes | Any]
) -> list[tuple[int, list[dict[str, Any]]]]:
    """POST each body as is (bytes) or as JSON; return (status, events) per body."""
    import json

    out: list[tuple[int, list[dict[str, Any]]]] = []
    async with (
        agent_app(speech_endpoint, lambda: ScriptedModel()) as url,
        httpx.AsyncClient(timeout=60) as http,
    ):
        for body in bodies:
            content = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers = {"content-type": "application/json"}
            async with aconnect_sse(
                http, "POST", url + "/invocations", content=content, headers=headers
            ) as src:
                events = [json.loads(sse.data) async for sse in src.aiter_sse()]
                out.append((src.response.status_code, events))
    return out


# The first test to ask for the session's model server pays its start (minutes on a busy 2-core machine),
# and pytest-timeout counts fixture setup against the test.
MODEL_SERVER_TIMEOUT = pytest.mark.timeout(600)


def types(record: TurnRecord) -> list[str]:
    return [e.event["type"] for e in record.events]


async def _bidi_then_batch(speech_endpoint: str) -> tuple[TurnRecord, TurnRecord, bool]:
    """A bidi turn whose model holds its last token until the client has heard audio, then a batch turn."""
    first_audio_heard = threading.Event()
    held = ScriptedModel(tokens_per_s=20, hold_before_last=first_audio_heard)
    async with agent_app(speech_endpoint, lambda: held) as url, httpx.AsyncClient(timeout=300) as http:
        bidi = TurnRecord(mode="bidi")
        async for timed in invoke_http(http, url, payload_for("otters?", "bidi")):
            bidi.add(timed)
            if timed.event["type"] == "audio_chunk":
                first_audio_heard.set()
    async with agent_app(speech_endpoint, lambda: ScriptedModel(tokens_per_s=20)) as url:
        batch = await run_turn(url, "otters?", "batch")
    return bidi, batch, held.finished


@MODEL_SERVER_TIMEOUT
def test_event_order_both_modes_with_real_model_server(model_server: RunningServer) -> None:
    bidi, batch, bidi_model_finished = asyncio.run(_bidi_then_batch(model_server.ws_url))
    assert bidi_model_finished
    for record, mode in ((bidi, "bidi"), (batch, "batch")):
        kinds = types(record)
        assert kinds[0] == "agent_start" and record.events[0].event["mode"] == mode
        assert kinds[-1] == "agent_end" and record.events[-1].event["mode"] == mode
        assert kinds.count("agent_start") == 1 and kinds.count("agent_end") == 1
        assert "error" not in kinds and "speech_error" not in kinds, record.summary()["errors"]
        assert record.text == FOUR_SENTENCES
        assert kinds.count("audio_chunk") >= 1
        end = record.events[-1].event
        # The summary's audio length is what the client decoded (each chunk within rounding).
        assert end["audio_ms"] == pytest.approx(record.audio_s * 1000, abs=1.0 * end["chunks"] + 1)
        assert end["chunks"] == kinds.count("audio_chunk")
        seqs = [e.event["seq"] for e in record.of_type("audio_chunk")]
        assert seqs == sorted(seqs)
    bidi_kinds, batch_kinds = types(bidi), types(batch)
    last_text = max(i for i, k in enumerate(bidi_kinds) if k == "text_delta")
    # bidi: audio of an early sentence reached the client while the model was still writing (the model
    # held its last token until then; had no audio come, it would have gone on after 120 s and failed here).
    assert bidi_kinds.index("audio_chunk") < last_text
    assert bidi_kinds.count("sentence_complete") >= 4
    # batch: nothing is spoken before the whole answer is written.
    assert batch_kinds.index("audio_chunk") > max(i for i, k in enumerate(batch_kinds) if k == "text_delta")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "bad_json"),
        (b"\xff\xfe\x00", 400, "bad_json"),
        (b"", 400, "bad_json"),
        (b"{" + b" " * (70 * 1024) + b"}", 413, "payload_too_large"),
        ({}, 200, "missing_prompt"),
        ([1, 2, 3], 200, "bad_payload"),
        ({"prompt": 5}, 200, "bad_payload"),
        ({"prompt": "x" * 4001}, 200, "prompt_too_long"),
        (b'{"prompt": "Hi \\ud800 there."}', 200, "bad_utf8"),  # a lone surrogate: refused before the turn
        ({"prompt": "hi", "mode": "duplex"}, 200, "unknown_mode"),
        ({"prompt": "hi", "speed": "fast"}, 200, "bad_speed"),
        (b'{"prompt": "hi", "speed": ' + b"1" * 400 + b"}", 200, "bad_speed"),  # overflows a float
        ({"prompt": "hi", "voice": ["af_heart"]}, 200, "bad_voice"),
    ],
)
def test_bad_payload_gets_one_coded_error_event(body: bytes | Any, status: int, code: str) -> None:
    [(got_status, events)] = asyncio.run(_raw_events(dead_endpoint(), [body]))
    assert got_status == status
    assert len(events) == 1
    assert events[0]["type"] == "error" and events[0]["code"] == code
    assert events[0]["message"] and "Traceback" not in events[0]["message"]


def test_a_fault_of_the_apps_own_reading_a_payload_is_coded_not_its_exception_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def parse_turn_with_a_bug(payload: Any) -> Any:  # a test double of a bug in the app
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr("agentcore_app.app.parse_turn", parse_turn_with_a_bug)
    [(got_status, events)] = asyncio.run(_raw_events(dead_endpoint(), [{"prompt": "hi"}]))
    assert got_status == 200 and len(events) == 1
    assert events[0]["type"] == "error" and events[0]["code"] == "internal_error"
    assert "int too large" not in events[0]["message"]


@MODEL_SERVER_TIMEOUT
def test_a_bad_payload_does_not_break_the_next_turn(model_server: RunningServer) -> None:
    results = asyncio.run(_raw_events(model_server.ws_url, [b"nope", {"prompt": "otters?", "mode": "bidi"}]))
    assert results[0][1][0]["code"] == "bad_json"
    kinds = [e["type"] for e in results[1][1]]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end" and "audio_chunk" in kinds


def test_tts_down_gives_speech_error_and_the_text_goes_on() -> None:
    [record] = asyncio.run(_turns(dead_endpoint(), lambda: ScriptedModel(), [{"prompt": "otters?"}]))
    kinds = types(record)
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert "speech_error" in kinds and "error" not in kinds
    assert record.text == FOUR_SENTENCES
    assert "audio_chunk" not in kinds
    assert record.events[-1].event["first_audio_ms"] is None


async def _disconnect_mid_turn(
    model_server: RunningServer, scripted: ScriptedModel
) -> tuple[list[str], dict[str, Any]]:
    speech_stats = model_server.http_url.removeprefix("http://")
    async with (
        agent_app(model_server.ws_url, lambda: scripted) as url,
        httpx.AsyncClient(timeout=60) as http,
    ):
        seen: list[str] = []
        async with aconnect_sse(http, "POST", url + "/invocations", json={"prompt": "otters?"}) as source:
            async for sse in source.aiter_sse():
                seen.append(sse.json()["type"])
                if "audio_chunk" in seen:
                    # The turn speaks; leave while the model server synthesizes one of its sentences
                    # (the slow writer keeps it busy). Leaving the block closes the connection mid-turn.
                    await wait_for_stats(speech_stats, synthesizing, timeout_s=60)
                    break
        # The turn is tracked by the SDK's /ping: HealthyBusy while it runs, Healthy once it ended.
        deadline = time.monotonic() + 30
        while (await http.get(url + "/ping")).json()["status"] != "Healthy":
            if time.monotonic() > deadline:
                raise AssertionError("the turn kept running after the client disconnected")
            await asyncio.sleep(0.1)
        # And the model server let go of it: its speech session closed, no engine work goes on.
        speech_after = await wait_for_stats(speech_stats, idle, timeout_s=30)
        return seen, speech_after


@MODEL_SERVER_TIMEOUT
def test_client_disconnect_cancels_the_turn_and_its_speech(model_server: RunningServer) -> None:
    scripted = ScriptedModel(answer=FOUR_SENTENCES * 4, tokens_per_s=6.5)
    seen, speech_after = asyncio.run(_disconnect_mid_turn(model_server, scripted))
    assert seen[0] == "agent_start" and "agent_end" not in seen
    assert scripted.stopped_early and not scripted.finished
    assert scripted.tokens_sent < len(scripted.tokens)
    assert idle(speech_after)


@pytest.mark.slow
def test_python_m_agentcore_app_serves_the_contract(tmp_path: Any) -> None:
    """``python -m agentcore_app`` as the container runs it: /ping answers, /invocations streams SSE."""
    import subprocess
    import sys

    port = free_port()
    cmd = [sys.executable, "-m", "agentcore_app", "--port", str(port), "--speech-endpoint", dead_endpoint()]
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_ready(process, f"http://127.0.0.1:{port}", 60, name="python -m agentcore_app")
        ping = httpx.get(f"http://127.0.0.1:{port}/ping", timeout=1)
        assert ping.status_code == 200 and ping.json()["status"] == "Healthy"
        response = httpx.post(f"http://127.0.0.1:{port}/invocations", json={"mode": "bidi"}, timeout=30)
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.text.startswith("data: ") and '"missing_prompt"' in response.text
    finally:
        process.terminate()
        process.wait(timeout=10)
