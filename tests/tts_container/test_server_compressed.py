"""Compressed audio from the model server: ``format`` opus / mp3 on POST and on the WebSocket.

The server is real (uvicorn over a real socket). ``ToneEngine`` (a test double) speaks a known tone, so
the decoded audio can be compared with the PCM the same request gives; the last test runs the real
Kokoro model (the ``model_server`` fixture) and checks the stream is one valid Ogg Opus per request.
"""

from __future__ import annotations

import httpx
import pytest

from strands_kokoro.audio_encoding import decode_audio
from strands_kokoro.protocol import WS_PATH, Close, audio_ms
from tests.model_server_process import running_app
from tests.tts_container.server_fakes import TONE_HZ, ToneEngine, dominant_hz, served_ms
from tests.tts_container.server_harness import dumps, open_ws, read_response
from tts_container.app import create_app

pytestmark = pytest.mark.anyio

TEXT = "One two three. Four five six seven."
MP3_SLACK_MS = 120.0  # LAME's encoder delay (46 ms at 24 kHz) and its last frame's padding


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(("fmt", "media"), [("opus", "audio/ogg"), ("mp3", "audio/mpeg")])
async def test_post_streams_a_compressed_body_with_fake_engine(fmt: str, media: str) -> None:
    async with running_app(create_app(ToneEngine)) as address, httpx.AsyncClient() as client:
        response = await client.post(
            f"http://{address}/invocations", json={"text": TEXT, "voice": "bf_emma", "format": fmt}
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media) and response.headers["x-audio-format"] == fmt
    assert response.content[:4] == b"OggS" if fmt == "opus" else response.content[:2] == b"\xff\xf3"
    pcm = decode_audio(response.content, fmt, 24_000)  # type: ignore[arg-type]
    expected = served_ms(3, 4)
    if fmt == "opus":
        assert audio_ms(len(pcm), 24_000) == pytest.approx(expected, abs=0.2)
    else:
        assert expected <= audio_ms(len(pcm), 24_000) <= expected + MP3_SLACK_MS
    assert dominant_hz(pcm, 24_000) == pytest.approx(TONE_HZ["bf_emma"], abs=3)
    # The compressed body is a fraction of the PCM it carries (24 kbit/s Opus, 32 kbit/s MP3).
    assert len(response.content) < len(pcm) / 6


async def test_ws_request_in_opus_then_one_in_pcm_on_the_same_session_with_fake_engine() -> None:
    async with running_app(create_app(ToneEngine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(text="One two three.", request_id="o", format="opus", voice="am_michael"))
        await ws.send(dumps(text="Four five six seven.", request_id="p"))
        opus, pcm = await read_response(ws), await read_response(ws)
        await ws.send(Close().to_wire())
    assert opus.start is not None and opus.end is not None and opus.end["type"] == "synthesis_complete"
    assert opus.start["format"] == "opus" and opus.start["sample_rate"] == 24_000
    stream = opus.pcm  # the request's binary frames back to back: one Ogg Opus stream
    assert stream[:4] == b"OggS" and opus.end["chunks"] == len(opus.audio)
    decoded = decode_audio(stream, "opus", 24_000)
    # audio_ms counts the PCM the stream carries, exactly what it decodes to.
    assert opus.end["audio_ms"] == pytest.approx(audio_ms(len(decoded), 24_000), abs=0.1)
    assert opus.end["audio_ms"] == pytest.approx(served_ms(3), abs=0.1)
    assert dominant_hz(decoded, 24_000) == pytest.approx(TONE_HZ["am_michael"], abs=3)
    assert pcm.start is not None and pcm.start["format"] == "pcm_s16le"
    assert pcm.end is not None and pcm.end["audio_ms"] == pytest.approx(audio_ms(len(pcm.pcm), 24_000))


async def test_an_unknown_format_is_refused_and_the_session_goes_on_with_fake_engine() -> None:
    async with running_app(create_app(ToneEngine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(text="One.", request_id="x", format="flac"))
        refused = await read_response(ws)
        await ws.send(dumps(text="Two.", request_id="y", format="mp3"))
        spoken = await read_response(ws)
    assert refused.end is not None and refused.end["code"] == "bad_format"
    assert refused.end["request_id"] == "x" and "flac" in refused.end["message"]
    assert spoken.start is not None and spoken.start["format"] == "mp3"
    assert spoken.end is not None and spoken.end["type"] == "synthesis_complete"
    assert decode_audio(spoken.pcm, "mp3", 24_000)


@pytest.mark.slow
async def test_real_model_speaks_each_request_as_its_own_ogg_opus_stream(model_server: object) -> None:
    url = f"{model_server.ws_url}{WS_PATH}"  # type: ignore[attr-defined]
    async with open_ws(url) as ws:
        for request_id in ("a", "b"):
            text = "Otters hold hands while they sleep."
            await ws.send(dumps(text=text, request_id=request_id, format="opus"))
        responses = [await read_response(ws), await read_response(ws)]
        await ws.send(Close().to_wire())
    for response in responses:
        assert response.end is not None and response.end["type"] == "synthesis_complete", response.end
        stream = response.pcm
        assert stream[:4] == b"OggS" and stream.count(b"OpusHead") == 1
        decoded = decode_audio(stream, "opus", 24_000)
        assert response.end["audio_ms"] == pytest.approx(audio_ms(len(decoded), 24_000), abs=0.1)
        assert response.end["audio_ms"] > 1000
        # Opus at 24 kbit/s: ~3 KB per second of speech, pages included.
        assert len(stream) / (response.end["audio_ms"] / 1000) < 4_500
