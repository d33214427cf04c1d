"""OpenAI's speech API on the REAL model server (onnx engine, real weights), driven by the real OpenAI SDK.

``client.audio.speech.with_streaming_response.create(...)`` with ``base_url`` at the ``model_server``
fixture: every ``response_format`` streams and decodes back (PyAV) to audio of about the length the
server's own PCM has; errors come back in OpenAI's shape with the right status, through the SDK's own
exception classes; the local-caller guard and the hang-up accounting cover this path as they cover
``POST /invocations``.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import wave
from typing import Any

import httpx
import openai
import pytest

from strands_kokoro.audio_encoding import decode_audio
from strands_kokoro.protocol import ServerError, audio_ms
from tests.model_server_process import RunningServer
from tests.tts_container.server_harness import idle, stats, wait_for_stats
from tts_container.routes.openai_speech import SPEECH_FORMATS, error_response, refusal_response

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TEXT = "The ferry left at dawn. It carried farmers and their goats across the river."
SHORT = "Hello there."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def client(server: RunningServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{server.http_url}/v1", api_key="not-needed", max_retries=0)


async def speak(server: RunningServer, **request: Any) -> tuple[bytes, int, dict[str, str]]:
    """The SDK's streamed speech: the bytes, how many chunks they came in, and the response headers."""
    chunks = []
    async with (
        client(server) as sdk,
        sdk.audio.speech.with_streaming_response.create(
            model=request.pop("model", "kokoro"), voice=request.pop("voice", "af_heart"), **request
        ) as response,
    ):
        async for chunk in response.iter_bytes():
            chunks.append(chunk)
        headers = dict(response.headers)
    return b"".join(chunks), len(chunks), headers


def decoded_ms(data: bytes, fmt: str) -> float:
    """The stream decoded back to 24 kHz PCM (PyAV), in ms; ``pcm`` is raw 24 kHz s16le already."""
    pcm = data if fmt == "pcm" else decode_audio(data, fmt, 24_000)  # type: ignore[arg-type]
    return audio_ms(len(pcm), 24_000)


async def test_every_response_format_streams_and_decodes_to_the_same_speech(
    model_server: RunningServer,
) -> None:
    reference, _, _ = await speak(model_server, input=TEXT, response_format="pcm")
    reference_ms = audio_ms(len(reference), 24_000)
    assert reference_ms > 2000  # two sentences of speech
    for fmt in SPEECH_FORMATS:
        data, _chunks, headers = await speak(model_server, input=TEXT, response_format=fmt)
        assert headers["content-type"].startswith(("audio/", "audio/ogg")), (fmt, headers)
        # Codecs pad (AAC's priming, LAME's delay, Opus's frames): a few tens of ms either way.
        assert decoded_ms(data, fmt) == pytest.approx(reference_ms, abs=150), fmt
    # A WAV of unknown length, as streaming writers make it: the standard library reads its header.
    wav, _, _ = await speak(model_server, input=SHORT, response_format="wav")
    with wave.open(io.BytesIO(wav)) as reader:
        assert (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) == (24_000, 1, 2)
    assert decoded_ms(wav, "wav") > 250


async def test_a_long_text_streams_its_first_bytes_before_the_rest_is_rendered(
    model_server: RunningServer,
) -> None:
    """The body arrives in several pieces, the first long before the last (no timing bound: the order)."""
    long_text = " ".join([TEXT] * 4)
    arrivals: list[float] = []
    loop = asyncio.get_running_loop()
    async with (
        client(model_server) as sdk,
        sdk.audio.speech.with_streaming_response.create(
            model="tts-1", voice="af_heart", input=long_text, response_format="mp3"
        ) as response,
    ):
        async for _ in response.iter_bytes():
            arrivals.append(loop.time())
    assert len(arrivals) >= 4
    assert arrivals[-1] - arrivals[0] > 0.5  # later audio was still being rendered when the first left


async def test_sse_stream_format_sends_audio_deltas_then_done(model_server: RunningServer) -> None:
    body = {"model": "kokoro", "voice": "af_heart", "input": SHORT, "response_format": "pcm"}
    async with httpx.AsyncClient(timeout=120) as http:
        response = await http.post(
            f"{model_server.http_url}/v1/audio/speech", json=body | {"stream_format": "sse"}
        )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in response.text.split("\n\n") if line.startswith("data: ")]
    assert {e["type"] for e in events[:-1]} == {"speech.audio.delta"} and events[-1][
        "type"
    ] == "speech.audio.done"
    pcm = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert audio_ms(len(pcm), 24_000) > 250


async def test_voices_and_models_are_listed(model_server: RunningServer) -> None:
    async with client(model_server) as sdk:
        models = await sdk.models.list()
    assert {m.id for m in models.data} >= {"kokoro", "tts-1", "tts-1-hd"}
    async with httpx.AsyncClient() as http:
        voices = (await http.get(f"{model_server.http_url}/v1/audio/voices")).json()
    assert "af_heart" in voices["voices"] and voices["default"] == "af_heart"
    # OpenAI's names that Kokoro has a namesake for speak with it.
    data, _, _ = await speak(model_server, input=SHORT, voice="alloy", response_format="pcm")
    assert audio_ms(len(data), 24_000) > 250


async def test_errors_come_in_openais_shape_with_the_right_status(model_server: RunningServer) -> None:
    async with client(model_server) as sdk:
        with pytest.raises(openai.BadRequestError) as unknown:
            await sdk.audio.speech.create(model="kokoro", voice="xx_nobody", input=SHORT)
    assert unknown.value.status_code == 400
    assert unknown.value.body == {
        "message": unknown.value.body["message"],  # type: ignore[index]
        "type": "invalid_request_error",
        "param": "voice",
        "code": "unknown_voice",
    }
    cases: list[tuple[dict[str, object], int, str, str]] = [
        ({"voice": "af_heart(0)+af_bella"}, 400, "bad_voice", "voice"),
        ({"voice": "af_heart+xx_nobody"}, 400, "unknown_voice", "voice"),
        ({"response_format": "ogg"}, 400, "bad_format", "response_format"),
        ({"speed": 9}, 400, "bad_speed", "speed"),
        ({"model": "whisper-1"}, 400, "model_not_found", "model"),
        ({"input": ""}, 400, "missing_text", "input"),
        ({"lexicon": {"Kokoro": "k(O"}}, 400, "bad_lexicon", "lexicon"),
    ]
    async with httpx.AsyncClient(timeout=60) as http:
        for change, status, code, param in cases:
            body: dict[str, object] = {"model": "kokoro", "voice": "af_heart", "input": SHORT} | change
            response = await http.post(f"{model_server.http_url}/v1/audio/speech", json=body)
            assert response.status_code == status, (change, response.text)
            error = response.json()["error"]
            assert (error["code"], error["param"], error["type"]) == (code, param, "invalid_request_error"), (
                change
            )
            assert "'text'" not in error["message"]  # our field names are not OpenAI's
        missing = await http.get(f"{model_server.http_url}/v1/audio/nothing")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        # The local-caller guard covers this path: a loopback POST that is not JSON is refused (415).
        plain = await http.post(
            f"{model_server.http_url}/v1/audio/speech", content=b"{}", headers={"content-type": "text/plain"}
        )
        assert plain.status_code == 415 and plain.json()["error"]["code"] == "bad_content_type"


def test_a_refusal_that_may_be_retried_says_when_429_with_retry_after() -> None:
    """The mapping alone (the refusal itself comes from the shared admission path)."""
    response = refusal_response(ServerError("r", "overloaded", "the queue is full", retry_after_ms=1500))
    assert response.status_code == 429 and response.headers["retry-after"] == "2"
    assert json.loads(bytes(response.body))["error"]["type"] == "rate_limit_error"
    assert error_response("engine_failed", "failed").status_code == 500


async def test_a_caller_who_hangs_up_stops_the_request(model_server: RunningServer) -> None:
    address = model_server.http_url.removeprefix("http://")
    await wait_for_stats(address, idle, timeout_s=120)
    before = await stats(address)
    long_text = " ".join([TEXT] * 6)
    async with (
        client(model_server) as sdk,
        sdk.audio.speech.with_streaming_response.create(
            model="kokoro", voice="af_heart", input=long_text, response_format="opus"
        ) as response,
    ):
        async for _ in response.iter_bytes():
            break  # the first bytes, then hang up

    # Idle alone can be seen between two engine calls, before the server has noticed the hang-up.
    def cancelled_and_idle(current: dict[str, Any]) -> bool:
        return idle(current) and current["requests_cancelled"] > before["requests_cancelled"]

    settled = await wait_for_stats(address, cancelled_and_idle, timeout_s=120)
    assert settled["requests_cancelled"] == before["requests_cancelled"] + 1, (before, settled)
    assert settled["requests_completed"] == before["requests_completed"], (before, settled)


async def test_mixed_voices_and_pronunciation_fields_are_taken(model_server: RunningServer) -> None:
    for voice in ("af_heart+af_bella", "af_heart(2)+af_bella(1)"):
        data, _, _ = await speak(model_server, input=SHORT, voice=voice, response_format="pcm")
        assert audio_ms(len(data), 24_000) > 250, voice
    said, _, _ = await speak(
        model_server,
        input="Kokoro [pause:0.5s] speaks.",
        response_format="pcm",
        extra_body={"lexicon": {"Kokoro": "kˈOkəɹO"}},
    )
    assert audio_ms(len(said), 24_000) > 1000
