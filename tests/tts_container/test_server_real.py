"""The real model server (``python -m tts_container --engine onnx``, real Kokoro weights) over real sockets.

Every test talks to the ``model_server`` subprocess fixture from tests/conftest.py. Speed is not
asserted here (benchmarks/tts_latency.py measures it); these tests check behaviour.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import wave

import httpx
import pytest
from httpx_sse import aconnect_sse
from websockets.asyncio.client import ClientConnection, connect

from strands_kokoro.protocol import (
    MAX_MESSAGE_BYTES,
    MAX_QUEUED_REQUESTS,
    MAX_TEXT_CHARS,
    WS_PATH,
    Cancel,
    Close,
    audio_ms,
)
from tests.tts_container.server_harness import (
    Response,
    dumps,
    open_ws,
    read_audio,
    read_frame,
    read_response,
    stats,
    wait_for_stats,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

VOICES = ("af_heart", "af_bella", "am_michael", "bf_emma", "am_adam", "af_nicole", "bm_george", "af_sky")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def ws_url(model_server: object) -> str:
    return f"{model_server.ws_url}{WS_PATH}"  # type: ignore[attr-defined]


def assert_consistent(response: Response, sample_rate: int = 24_000) -> None:
    """Bytes received between start and complete match what the server says it sent."""
    assert response.start is not None and response.end is not None, response
    assert response.end["type"] == "synthesis_complete", response.end
    assert response.start["request_id"] == response.end["request_id"]
    assert response.start["sample_rate"] == sample_rate
    assert len(response.pcm) % 2 == 0 and len(response.pcm) > sample_rate // 2  # more than 0.25 s of speech
    assert response.end["audio_ms"] == pytest.approx(audio_ms(len(response.pcm), sample_rate), abs=0.01)
    assert response.end["chunks"] == len(response.audio)
    # Word timings come as a segment is planned, before the audio that holds them (a segment's last
    # word waits for its last window, to be clamped into the audio kept); together they are the words
    # synthesis_complete lists.
    assert [w for _, words in response.timed for w in words] == response.end["words"] != []
    for received, words in response.timed:
        if len(words) > 1:  # not a segment's held last word
            assert all(w["start_ms"] >= audio_ms(received, sample_rate) - 1.0 for w in words), (
                received,
                words,
            )


async def test_ws_binary_frames_two_sentences_in_order_then_close(model_server: object) -> None:
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(type="synthesize", text="The first sentence is short.", request_id="one"))
        await ws.send(dumps(text="The second one follows it.", request_id="two"))  # no type: the AWS form
        first, second = await read_response(ws), await read_response(ws)
        assert_consistent(first)
        assert_consistent(second)
        assert (first.end or {})["request_id"] == "one" and (second.end or {})["request_id"] == "two"
        await ws.send(Close().to_wire().encode())
        await ws.wait_closed()
        assert ws.close_code == 1000


async def test_a_long_request_times_its_first_words_long_before_it_completes(model_server: object) -> None:
    """Captions of a request heard while it is still synthesized: its first words are timed with its
    first audio, not at ``synthesis_complete``."""
    text = (
        "The old ferry carried farmers and their goats across the wide brown river every morning, "
        "and in the evening it brought them home again with empty baskets and tired feet."
    )
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(type="synthesize", text=text, request_id="long"))
        response = await read_response(ws)
    assert_consistent(response)
    assert len(response.timed) >= 2, response.timed
    first_received, first_words = response.timed[0]
    assert first_received == 0 and first_words[0]["text"] == "The"
    assert len(first_words) < len(text.split())


async def expect_error(ws: ClientConnection, payload: bytes, code: str) -> None:
    await ws.send(payload)
    frame = await read_frame(ws)
    assert isinstance(frame, dict) and frame["type"] == "error", frame
    assert frame["code"] == code, frame
    assert frame["message"] and frame["message"] != "'text'"


async def test_every_error_code_is_answered_and_the_session_goes_on(model_server: object) -> None:
    async with open_ws(ws_url(model_server)) as ws:
        await expect_error(ws, b"\xff\xfe\x00 not utf-8", "bad_utf8")
        await expect_error(ws, b"{not json", "bad_json")
        await expect_error(ws, b'["a", "json", "array"]', "bad_message")
        await expect_error(ws, dumps(type="synthesize", voice="af_heart"), "missing_text")
        await expect_error(ws, dumps(text="a" * (MAX_TEXT_CHARS + 1)), "text_too_long")
        await expect_error(ws, dumps(text="x" * (MAX_MESSAGE_BYTES + 1)), "message_too_large")
        await expect_error(ws, dumps(text="Hi.", voice="zz_nobody"), "unknown_voice")
        await expect_error(ws, dumps(text="Hi.", speed=0), "bad_speed")
        await expect_error(ws, dumps(text="Hi.", speed=100), "bad_speed")
        await expect_error(ws, dumps(text="Hi.", sample_rate=12_345), "bad_sample_rate")
        await expect_error(ws, dumps(type="sing", text="Hi."), "unknown_type")
        await ws.send(json.dumps({"text": "Text frames work too.", "request_id": "text-frame"}))  # str frame
        assert_consistent(await read_response(ws))

        flood = MAX_QUEUED_REQUESTS + 8
        for i in range(flood):
            await ws.send(dumps(text="Hi.", request_id=f"f{i}"))
        await ws.send(Cancel().to_wire().encode())
        overloaded, completed = 0, 0
        while True:
            frame = await read_frame(ws)
            if isinstance(frame, bytes):
                continue
            if frame["type"] == "cancelled":
                break
            if frame["type"] == "error":
                assert frame["code"] == "overloaded", frame
                overloaded += 1
            completed += frame["type"] == "synthesis_complete"
        assert overloaded >= 1
        assert overloaded + completed + frame["dropped"] == flood

        await ws.send(dumps(text="After all that, a valid request still works.", request_id="last"))
        last = await read_response(ws)
        assert_consistent(last)
        assert (last.end or {})["request_id"] == "last"


async def test_cancel_stops_a_long_request_and_the_session_goes_on(model_server: object) -> None:
    text = " ".join(
        f"This is sentence number {n} of a long answer." for n in ("one", "two", "three", "four", "five")
    )
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(text=text, request_id="long"))
        await ws.send(dumps(text="A queued sentence.", request_id="queued"))
        start = await read_frame(ws)
        assert isinstance(start, dict) and start["type"] == "synthesis_start"
        await read_audio(ws)
        await ws.send(Cancel().to_wire().encode())
        frame = await read_frame(ws)
        while isinstance(frame, bytes):
            frame = await read_frame(ws)
        assert frame == {"type": "cancelled", "dropped": 2}
        await ws.send(dumps(text="Back to normal.", request_id="after"))
        after = await read_response(ws)
        assert_consistent(after)
        assert (after.end or {})["request_id"] == "after"


async def test_disconnect_mid_synthesis_leaks_nothing(model_server: object) -> None:
    http_url: str = model_server.http_url  # type: ignore[attr-defined]
    ws = await connect(ws_url(model_server))
    hello = await read_frame(ws)
    assert isinstance(hello, dict) and hello["type"] == "session_start"
    await ws.send(dumps(text=" ".join(["A long sentence that keeps the engine busy for a while."] * 6)))
    await ws.send(dumps(text="And a queued one behind it."))
    assert isinstance(await read_frame(ws), dict)
    await read_audio(ws)
    ws.transport.abort()  # gone without a close handshake
    address = http_url.removeprefix("http://")
    idle = await wait_for_stats(
        address,
        lambda s: s["sessions_active"] == 0 and s["inference_running"] == 0 and s["inference_queued"] == 0,
        timeout_s=60,
    )
    # The next client's request, twice: engine calls are counted per request, and the same text takes
    # the same calls. Had work for the client that is gone gone on, it would have taken turns with the
    # first one (sessions' segments alternate) and made it cost more engine calls than the second.
    counts = [idle["inference_completed"]]
    async with open_ws(ws_url(model_server)) as again:
        for _ in range(2):
            await again.send(dumps(text="The server keeps serving."))
            assert_consistent(await read_response(again))
            counts.append((await stats(address))["inference_completed"])
    first, second = counts[1] - counts[0], counts[2] - counts[1]
    assert first == second >= 1, f"engine work went on after the client left: {counts}"


SENTENCES_PER_SESSION = 2


async def _session(url: str, index: int) -> list[Response]:
    voice = VOICES[index]
    async with open_ws(url) as ws:
        for k in range(SENTENCES_PER_SESSION):
            await ws.send(
                dumps(
                    text=f"Session {index + 1} says sentence {k + 1}.",
                    voice=voice,
                    request_id=f"s{index}-{k}",
                )
            )
        responses = [await read_response(ws, timeout_s=240) for _ in range(SENTENCES_PER_SESSION)]
        await ws.send(Close().to_wire())
    return responses


# 10 syntheses (4 x 2, then one session again alone): about 10 s on an idle 2-core CPU; a CI box shared
# with other jobs can be 10x slower.
@pytest.mark.timeout(900)
async def test_four_concurrent_sessions_two_sentences_each(model_server: object) -> None:
    url = ws_url(model_server)
    address = model_server.http_url.removeprefix("http://")  # type: ignore[attr-defined]
    running: list[int] = []

    async def watch_the_engine() -> None:
        while True:
            current = await stats(address)
            running.append(current["inference_running"])
            await asyncio.sleep(0.02)

    async with asyncio.TaskGroup() as tasks:
        watcher = tasks.create_task(watch_the_engine())
        sessions = [tasks.create_task(_session(url, i)) for i in range(4)]
        await asyncio.gather(*sessions)
        watcher.cancel()
    # While several requests render, an engine with two lanes runs two calls side by side.
    lanes = (await stats(address))["inference_lanes"]
    assert max(running) == lanes, (lanes, sorted(set(running)))
    for index, session in enumerate(sessions):
        responses = session.result()
        expected_ids = [f"s{index}-{k}" for k in range(SENTENCES_PER_SESSION)]
        assert [(r.end or {}).get("request_id") for r in responses] == expected_ids
        for response in responses:
            assert_consistent(response)
    # No audio of one session in another: the same text and voice synthesized alone gives the same bytes
    # (the engine is deterministic), so any foreign frame in a concurrent session would show up here.
    solo = await _session(url, 2)
    assert [r.pcm for r in solo] == [r.pcm for r in sessions[2].result()]


async def test_post_invocations_in_all_three_formats(model_server: object) -> None:
    url = f"{model_server.http_url}/invocations"  # type: ignore[attr-defined]
    text = "Streaming speech over plain HTTP."
    async with httpx.AsyncClient(timeout=120) as client:
        pcm = await client.post(url, json={"text": text})
        assert pcm.status_code == 200 and pcm.headers["x-audio-format"] == "pcm_s16le"
        assert len(pcm.content) > 24_000  # over half a second of 24 kHz speech

        wav = await client.post(url, json={"text": text, "format": "wav", "sample_rate": 16_000})
        assert wav.status_code == 200 and wav.content[:4] == b"RIFF"
        with wave.open(io.BytesIO(wav.content), "rb") as reader:
            assert reader.getframerate() == 16_000
            resampled = reader.readframes(10**9)
        assert len(resampled) / len(pcm.content) == pytest.approx(16 / 24, rel=0.01)

        async with aconnect_sse(client, "POST", url, json={"text": text, "format": "sse"}) as source:
            events = [event.json() async for event in source.aiter_sse()]
        assert events[0]["type"] == "synthesis_start" and events[-1]["type"] == "synthesis_complete"
        sse_pcm = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "audio")
        assert sse_pcm == pcm.content  # same text, same voice: the same audio in every format
        assert events[-1]["audio_ms"] == pytest.approx(audio_ms(len(sse_pcm), 24_000), abs=0.01)

        bad = await client.post(url, json={"text": "Hi.", "voice": "zz_nobody"})
        assert bad.status_code == 400 and bad.json()["code"] == "unknown_voice"


async def test_ping_answers_while_synthesis_runs(model_server: object) -> None:
    http_url: str = model_server.http_url  # type: ignore[attr-defined]
    async with open_ws(ws_url(model_server)) as ws, httpx.AsyncClient(timeout=5) as client:
        await ws.send(dumps(text=" ".join(["The engine is busy synthesizing this sentence."] * 4)))
        start = await read_frame(ws)
        assert isinstance(start, dict) and start["type"] == "synthesis_start"
        statuses = []
        for _ in range(5):
            statuses.append((await client.get(f"{http_url}/ping")).status_code)
            busy = (await client.get(f"{http_url}/stats")).json()
            assert busy["sessions_active"] >= 1
        assert statuses == [200] * 5
        assert_consistent(await read_response(ws, start=start))


async def test_voices_lists_every_voice_and_the_language_it_is_read_in(model_server: object) -> None:
    http_url: str = model_server.http_url  # type: ignore[attr-defined]
    async with httpx.AsyncClient(timeout=30) as client:
        listed = (await client.get(f"{http_url}/voices")).json()
        refused = await client.post(f"{http_url}/invocations", json={"text": "Hi.", "voice": "xx_nope"})
    langs = {voice["name"]: voice["lang"] for voice in listed["voices"]}
    assert listed["default"] == "af_heart" and len(langs) == 54
    assert set(VOICES) <= set(langs)
    assert (langs["af_heart"], langs["bf_emma"], langs["ff_siwis"], langs["jf_alpha"]) == (
        "en-us",
        "en-gb",
        "fr-fr",
        "ja",
    )
    assert "GET /voices" in refused.json()["message"]
