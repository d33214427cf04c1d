"""Session semantics against ``ToneEngine`` (a test double): ordering, cancel, failures, fairness.

These run a real uvicorn over a real socket in-process; the same paths run against the real Kokoro
model in test_server_real.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from websockets.asyncio.client import connect

from strands_kokoro.protocol import WS_PATH, Cancel, Close, SynthesizeRequest, audio_ms
from tests.model_server_process import running_app, wait_for_ping
from tests.tts_container.server_fakes import TONE_HZ, ToneEngine, dominant_hz, served_ms
from tests.tts_container.server_harness import (
    dumps,
    open_ws,
    read_audio,
    read_frame,
    read_response,
    stats,
    wait_for_stats,
)
from tts_container.app import create_app
from tts_container.scheduling import admission
from tts_container.synthesis.synthesizer import Synthesizer
from tts_container.weights.cache import WeightsUnavailable

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_two_requests_in_order_then_close_with_fake_engine() -> None:
    async with running_app(create_app(ToneEngine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(type="synthesize", text="One two three.", request_id="a"))
        await ws.send(dumps(text="Four five six seven.", request_id="b", voice="am_michael"))
        first, second = await read_response(ws), await read_response(ws)
        assert first.end is not None and second.end is not None
        assert (first.end["request_id"], second.end["request_id"]) == ("a", "b")
        for response, voice in ((first, "af_heart"), (second, "am_michael")):
            assert response.end is not None and response.start is not None
            assert response.start["sample_rate"] == 24_000
            assert response.end["chunks"] == len(response.audio)
            assert response.end["audio_ms"] == pytest.approx(audio_ms(len(response.pcm), 24_000), abs=0.01)
            assert dominant_hz(response.pcm, 24_000) == pytest.approx(TONE_HZ[voice], abs=3)
        await ws.send(Close().to_wire())
        await ws.wait_closed()
        assert ws.close_code == 1000


async def test_close_finishes_queued_requests_first_with_fake_engine() -> None:
    async with running_app(create_app(ToneEngine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(text="One."))
        await ws.send(dumps(text="Two."))
        await ws.send(Close().to_wire())
        ends = [(await read_response(ws)).end for _ in range(2)]
        assert all(end is not None and end["type"] == "synthesis_complete" for end in ends)
        await ws.wait_closed()
        assert ws.close_code == 1000


async def test_silences_are_shortened_and_edges_faded_with_fake_engine() -> None:
    async with running_app(create_app(ToneEngine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(text="One two three four five."))  # 0.5 s of tone, 0.5 s of silence
        response = await read_response(ws)
    assert response.end is not None
    # The kept lead + 500 ms of tone + the kept tail, instead of the fake's 100 + 500 + 400 ms.
    assert response.end["audio_ms"] == pytest.approx(served_ms(5), abs=0.1)
    assert response.pcm[:2] == b"\x00\x00" and response.pcm[-2:] == b"\x00\x00"


async def test_resampled_rate_with_fake_engine() -> None:
    async with running_app(create_app(ToneEngine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(text="One two three. Four five six.", sample_rate=16_000))
        response = await read_response(ws)
    assert response.start is not None and response.start["sample_rate"] == 16_000
    assert response.end is not None
    # Resampling changes no time: the same length as at 24 kHz, within soxr's last samples.
    assert response.end["audio_ms"] == pytest.approx(served_ms(3, 3), abs=1.0)
    assert dominant_hz(response.pcm, 16_000) == pytest.approx(220, abs=3)


async def test_engine_failure_is_coded_and_session_goes_on_with_fake_engine() -> None:
    async with running_app(create_app(ToneEngine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(text="This will FAIL.", request_id="bad"))
        failed = await read_response(ws)
        assert failed.end is not None
        assert failed.end["code"] == "engine_failed" and failed.end["request_id"] == "bad"
        assert "secret" not in failed.end["message"]
        await ws.send(dumps(text="Fine now.", request_id="good"))
        good = await read_response(ws)
        assert good.end is not None and good.end["type"] == "synthesis_complete" and good.pcm


async def test_cancel_drops_queued_and_stops_in_flight_with_fake_engine() -> None:
    engine = ToneEngine(delay_s=0.2)
    async with running_app(create_app(lambda: engine)) as address:
        async with open_ws(f"ws://{address}{WS_PATH}") as ws:
            long_text = " ".join(f"Sentence number {i}." for i in range(20))
            await ws.send(dumps(text=long_text, request_id="long"))
            await ws.send(dumps(text="Queued one.", request_id="q1"))
            await ws.send(dumps(text="Queued two.", request_id="q2"))
            start = await read_frame(ws)
            assert isinstance(start, dict) and start["type"] == "synthesis_start"
            await read_audio(ws)  # audio flows: the first segment arrived
            await ws.send(Cancel().to_wire())
            frame = await read_frame(ws)
            while isinstance(frame, bytes):  # frames already on the wire before the cancel was read
                frame = await read_frame(ws)
            assert frame == {"type": "cancelled", "dropped": 3}
            await ws.send(dumps(text="After cancel.", request_id="after"))
            after = await read_response(ws)
            assert after.start is not None and after.start["request_id"] == "after"
            assert after.end is not None and after.end["type"] == "synthesis_complete"
        spoken = [text for text, _ in engine.calls]
        assert "Queued one." not in spoken and "Queued two." not in spoken
        assert len([t for t in spoken if t.startswith("Sentence number")]) < 6  # stopped early, not 20


async def test_flood_past_queue_limit_is_overloaded_with_fake_engine() -> None:
    async with (
        running_app(create_app(lambda: ToneEngine(delay_s=0.05))) as address,
        open_ws(f"ws://{address}{WS_PATH}") as ws,
    ):
        for i in range(45):
            await ws.send(dumps(text="Hi.", request_id=f"r{i}"))
        overloaded: list[str] = []
        completed: list[str] = []
        while len(overloaded) + len(completed) < 45:
            frame = await read_frame(ws)
            if isinstance(frame, dict) and frame["type"] == "error":
                assert frame["code"] == "overloaded"
                overloaded.append(frame["request_id"])
            elif isinstance(frame, dict) and frame["type"] == "synthesis_complete":
                completed.append(frame["request_id"])
        assert overloaded, "45 requests at once must pass the 32-request queue limit"
        assert completed == sorted(completed, key=lambda rid: int(rid[1:]))
        await ws.send(dumps(text="Still here."))
        assert (await read_response(ws)).end is not None


async def test_next_request_is_synthesized_while_previous_audio_waits_with_fake_engine() -> None:
    """Pipelining: request 2 reaches the engine before the client has read anything of request 1."""
    engine = ToneEngine()
    async with running_app(create_app(lambda: engine)) as address:
        warm_calls = len(engine.calls)
        async with open_ws(f"ws://{address}{WS_PATH}") as ws:
            await ws.send(dumps(text="First request."))
            await ws.send(dumps(text="Second request."))
            async with asyncio.timeout(10):
                while True:
                    if [t for t, _ in engine.calls[warm_calls:]] == ["First request.", "Second request."]:
                        break
                    await asyncio.sleep(0.01)
            first, second = await read_response(ws), await read_response(ws)
            assert first.end is not None and second.end is not None


async def test_sessions_take_turns_segment_by_segment_with_fake_engine() -> None:
    """Fairness: a short request of session B is not stuck behind session A's long text."""
    engine = ToneEngine(delay_s=0.1)
    async with (
        running_app(create_app(lambda: engine)) as address,
        open_ws(f"ws://{address}{WS_PATH}") as a,
        open_ws(f"ws://{address}{WS_PATH}") as b,
    ):
        await a.send(dumps(text=" ".join(f"Long part {i}." for i in range(15))))
        start = await read_frame(a)  # synthesis_start: A is being synthesized
        assert isinstance(start, dict)
        long_parts_before_b = sum(text.startswith("Long part") for text, _ in engine.calls)
        await b.send(dumps(text="Short."))
        short = await read_response(b)
        assert short.end is not None
        long_done = await read_response(a, start=start)
        assert long_done.end is not None
    # In the engine's own order: B's sentence waited for at most A's segment in progress and the one A
    # had queued when B arrived, not for the rest of A's fifteen.
    spoken = [text for text, _ in engine.calls]
    long_parts_before_short = sum(text.startswith("Long part") for text in spoken[: spoken.index("Short.")])
    assert long_parts_before_short <= long_parts_before_b + 2, spoken
    assert spoken.index("Long part 14.") > spoken.index("Short.")


async def test_disconnect_mid_synthesis_leaks_nothing_with_fake_engine() -> None:
    engine = ToneEngine(delay_s=0.1)
    async with running_app(create_app(lambda: engine)) as address:
        baseline = await stats(address)
        ws = await connect(f"ws://{address}{WS_PATH}")
        hello = await read_frame(ws)
        assert isinstance(hello, dict) and hello["type"] == "session_start"
        await ws.send(dumps(text=" ".join(f"Part {i}." for i in range(30))))
        await ws.send(dumps(text="Queued behind it."))
        assert isinstance(await read_frame(ws), dict)
        await read_audio(ws)
        ws.transport.abort()  # vanish without a close handshake
        settled = await wait_for_stats(
            address,
            lambda s: (
                s["sessions_active"] == 0 and s["inference_running"] == 0 and s["inference_queued"] == 0
            ),
        )
        assert settled["asyncio_tasks"] <= baseline["asyncio_tasks"] + 1  # + the /stats request itself
        calls = len(engine.calls)
        async with open_ws(f"ws://{address}{WS_PATH}") as again:
            await again.send(dumps(text="Still serving."))
            assert (await read_response(again)).end is not None
        # Until the next client's request was served, the engine worked for it alone (segments of
        # sessions take turns, so a request of the client that is gone would have come in between).
        assert [text for text, _ in engine.calls[calls:]] == ["Still serving."], "work for a gone client"


async def test_ping_is_503_until_loaded_and_warm_with_fake_engine() -> None:
    release = threading.Event()

    def slow_load() -> ToneEngine:
        release.wait(10)
        return ToneEngine()

    async with running_app(create_app(slow_load), wait_ready=False) as address:
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"http://{address}/ping")).status_code == 503
            post = await client.post(f"http://{address}/invocations", json={"text": "Hi."})
            assert post.status_code == 503 and post.json()["code"] == "not_ready"
        async with connect(f"ws://{address}{WS_PATH}") as ws:  # no session_start: there is no session yet
            frame = await read_frame(ws)
            assert isinstance(frame, dict) and frame["code"] == "not_ready"
            await ws.wait_closed()
        release.set()
        started = time.monotonic()
        await wait_for_ping(address)
        assert time.monotonic() - started < 10


async def test_weights_no_source_provides_are_one_error_line_and_a_failed_ping(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Offline, ``--engine torch`` has no checkpoint: the server said so under a 30-line traceback."""

    def unavailable() -> ToneEngine:
        raise WeightsUnavailable([("registry packages", "no registry package carries kokoro-v1_0.pth")])

    caplog.set_level(logging.ERROR, logger="tts_container.app")
    async with (
        running_app(create_app(unavailable), wait_ready=False) as address,
        httpx.AsyncClient() as client,
    ):
        for _ in range(200):
            ping = await client.get(f"http://{address}/ping")
            if ping.json()["status"] == "failed":
                break
            await asyncio.sleep(0.05)
        # What asks for speech then is told the model failed to load, not that it is still loading.
        posted = await client.post(f"http://{address}/invocations", json={"text": "Hi."})
        listed = await client.get(f"http://{address}/voices")
        async with connect(f"ws://{address}{WS_PATH}") as ws:
            refused = json.loads(await ws.recv())
    assert ping.status_code == 503 and ping.json()["status"] == "failed"
    assert [posted.json()["code"], listed.json()["code"], refused["code"]] == ["engine_failed"] * 3
    assert "failed to load" in posted.json()["message"]
    (record,) = [r for r in caplog.records if "loading the engine failed" in r.getMessage()]
    assert record.exc_info is None and "kokoro-v1_0.pth" in record.getMessage()


def _admit_failing_on(marker: str) -> Callable[[Synthesizer, SynthesizeRequest], object]:
    """``admission.admit`` with a fault of the server's own for texts holding ``marker`` (a test double
    of a bug: the paths that must survive one have no real bug to trigger)."""

    real_admit = admission.admit

    def admit(synthesizer: Synthesizer, request: SynthesizeRequest) -> object:
        if marker in request.text:
            raise RuntimeError("a bug in the server")
        return real_admit(synthesizer, request)

    return admit


async def test_a_server_fault_reading_one_message_is_answered_and_the_session_goes_on_with_fake_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tts_container.scheduling.admission.admit", _admit_failing_on("BUG"))
    async with running_app(create_app(ToneEngine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(text="BUG here.", request_id="bug"))
        await ws.send(dumps(text="One two three.", request_id="after"))
        fault = await read_frame(ws)
        assert isinstance(fault, dict) and fault["type"] == "error" and fault["code"] == "internal_error"
        after = await read_response(ws)
        assert after.end is not None and after.end["request_id"] == "after" and after.pcm


async def test_a_server_fault_on_post_is_a_coded_500_with_fake_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tts_container.scheduling.admission.admit", _admit_failing_on("BUG"))
    async with running_app(create_app(ToneEngine)) as address, httpx.AsyncClient() as client:
        failed = await client.post(f"http://{address}/invocations", json={"text": "BUG here."})
        after = await client.post(f"http://{address}/invocations", json={"text": "One two three."})
    assert failed.status_code == 500 and failed.json()["code"] == "internal_error"
    assert after.status_code == 200 and after.content
