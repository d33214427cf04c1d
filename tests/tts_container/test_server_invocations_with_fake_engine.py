"""POST /invocations against ``ToneEngine`` (a test double): formats, streaming, coded errors.

The same three formats run against the real model in test_server_real.py.
"""

from __future__ import annotations

import base64
import io
import wave

import httpx
import pytest
from httpx_sse import aconnect_sse

from strands_kokoro.protocol import MAX_MESSAGE_BYTES, MAX_TEXT_CHARS, audio_ms
from tests.model_server_process import running_app
from tests.tts_container.server_fakes import TONE_HZ, ToneEngine, dominant_hz, served_ms
from tts_container.app import create_app

pytestmark = pytest.mark.anyio

TEXT = "One two three. Four five six seven."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_pcm_streams_raw_s16le_with_fake_engine() -> None:
    async with running_app(create_app(ToneEngine)) as address, httpx.AsyncClient() as client:
        response = await client.post(f"http://{address}/invocations", json={"text": TEXT, "voice": "bf_emma"})
    assert response.status_code == 200
    assert response.headers["x-audio-format"] == "pcm_s16le" and response.headers["x-sample-rate"] == "24000"
    # Two sentences (3 and 4 words), each tone with the server's kept edge silences; within a sample each.
    assert audio_ms(len(response.content), 24_000) == pytest.approx(served_ms(3, 4), abs=0.1)
    assert dominant_hz(response.content, 24_000) == pytest.approx(TONE_HZ["bf_emma"], abs=3)


async def test_wav_has_streaming_header_with_fake_engine() -> None:
    async with running_app(create_app(ToneEngine)) as address, httpx.AsyncClient() as client:
        response = await client.post(
            f"http://{address}/invocations", json={"text": TEXT, "format": "wav", "sample_rate": 48_000}
        )
    assert response.status_code == 200 and response.headers["content-type"] == "audio/wav"
    assert response.content[4:8] == b"\xff\xff\xff\xff"
    with wave.open(io.BytesIO(response.content), "rb") as reader:
        assert reader.getframerate() == 48_000 and reader.getnchannels() == 1 and reader.getsampwidth() == 2
        pcm = reader.readframes(10**9)
    assert len(pcm) == len(response.content) - 44 and len(pcm) > 48_000  # over half a second of audio
    assert dominant_hz(pcm, 48_000) == pytest.approx(TONE_HZ["af_heart"], abs=3)


async def test_sse_events_carry_base64_audio_with_fake_engine() -> None:
    request = {"text": TEXT, "format": "sse", "request_id": "s1"}
    async with (
        running_app(create_app(ToneEngine)) as address,
        httpx.AsyncClient() as client,
        aconnect_sse(client, "POST", f"http://{address}/invocations", json=request) as source,
    ):
        assert source.response.headers["content-type"].startswith("text/event-stream")
        events = [event.json() async for event in source.aiter_sse()]
    kinds = [event["type"] for event in events]
    assert kinds[0] == "synthesis_start" and kinds[-1] == "synthesis_complete"
    assert set(kinds[1:-1]) == {"audio"}
    pcm = b"".join(base64.b64decode(event["audio"]) for event in events[1:-1])
    assert [event["seq"] for event in events[1:-1]] == list(range(len(events) - 2))
    assert all(event["request_id"] == "s1" for event in events)
    assert events[-1]["audio_ms"] == pytest.approx(audio_ms(len(pcm), 24_000), abs=0.01)
    assert events[-1]["chunks"] == len(events) - 2


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "bad_json"),
        (b"\xff\xfe", 400, "bad_utf8"),
        (b"[1, 2]", 400, "bad_message"),
        (b'{"voice": "af_heart"}', 400, "missing_text"),
        (('{"text": "' + "a" * (MAX_TEXT_CHARS + 1) + '"}').encode(), 400, "text_too_long"),
        (b'{"text": "Hi.", "voice": "zz_nobody"}', 400, "unknown_voice"),
        (b'{"text": "Hi.", "speed": 100}', 400, "bad_speed"),
        (b'{"text": "Hi.", "sample_rate": 12345}', 400, "bad_sample_rate"),
        (b'{"text": "Hi.", "format": "flac"}', 400, "bad_format"),
        (b" " * (MAX_MESSAGE_BYTES + 10), 413, "message_too_large"),
    ],
)
async def test_bad_bodies_get_coded_errors_with_fake_engine(body: bytes, status: int, code: str) -> None:
    async with running_app(create_app(ToneEngine)) as address, httpx.AsyncClient() as client:
        headers = {"content-type": "application/json"}  # a loopback server refuses anything else (415)
        response = await client.post(f"http://{address}/invocations", content=body, headers=headers)
        assert (response.status_code, response.json()["code"], response.json()["type"]) == (
            status,
            code,
            "error",
        )
        ok = await client.post(f"http://{address}/invocations", json={"text": "Still fine."})
        assert ok.status_code == 200 and ok.content


async def test_sse_reports_engine_failure_as_coded_event_with_fake_engine() -> None:
    request = {"text": "Good. Then FAIL.", "format": "sse"}
    async with (
        running_app(create_app(ToneEngine)) as address,
        httpx.AsyncClient() as client,
        aconnect_sse(client, "POST", f"http://{address}/invocations", json=request) as source,
    ):
        events = [event.json() async for event in source.aiter_sse()]
    assert events[-1]["type"] == "error" and events[-1]["code"] == "engine_failed"
    assert "secret" not in events[-1]["message"]
    assert any(event["type"] == "audio" for event in events)  # the first sentence was spoken
