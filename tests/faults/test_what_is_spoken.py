"""What the model server speaks of a text, and what it refuses before any audio.

A byte order mark, a voice's own language, a language the server cannot read and a number too long to
read as a number: each is spoken as a listener expects or refused with a code before any audio. Against
the REAL model server (``model_server``).
"""

from __future__ import annotations

import json

import httpx
import pytest

from strands_kokoro.protocol import WS_PATH, Cancel
from tests.faults.wire import read_transcript
from tests.model_server_process import RunningServer
from tests.tts_container.server_harness import dumps, open_ws

pytestmark = pytest.mark.anyio


def ws_url(server: RunningServer) -> str:
    return server.ws_url + WS_PATH


async def test_a_post_body_with_a_byte_order_mark_is_spoken_as_the_agent_app_reads_it(
    model_server: RunningServer,
) -> None:
    body = b"\xef\xbb\xbf" + json.dumps({"text": "Hello there.", "format": "pcm"}).encode()
    async with httpx.AsyncClient(timeout=60) as client:
        spoken = await client.post(
            model_server.http_url + "/invocations", content=body, headers={"content-type": "application/json"}
        )
    assert spoken.status_code == 200 and len(spoken.content) > 24_000  # over half a second of 24 kHz s16


async def test_a_french_voice_without_lang_reads_french_as_with_lang_fr(model_server: RunningServer) -> None:
    text = "Bonjour tout le monde, nous sommes prêts."

    async def spoken(**fields: str) -> bytes:
        body = json.dumps({"text": text, "voice": "ff_siwis", "format": "pcm"} | fields)
        async with httpx.AsyncClient(timeout=120) as client:
            response = await client.post(
                model_server.http_url + "/invocations",
                content=body,
                headers={"content-type": "application/json"},
            )
        assert response.status_code == 200
        return response.content

    own_language = await spoken()
    assert own_language == await spoken(lang="fr")  # a request renders deterministically
    assert own_language != await spoken(lang="en-us")


async def test_unsupported_lang_over_ws_is_refused_before_any_audio(
    model_server: RunningServer,
) -> None:
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(text="Guten Tag.", request_id="de", lang="de"))
        await ws.send(dumps(text="Annyeong.", request_id="ko", lang="ko"))
        await ws.send(dumps(text="Fine.", request_id="en"))
        transcript = await read_transcript(ws, ends=3)
    for request_id in ("de", "ko"):
        assert transcript.end_of(request_id)["code"] == "unsupported_lang"
        assert ("synthesis_start", request_id) not in transcript.kinds()
    assert transcript.end_of("en")["type"] == "synthesis_complete"


@pytest.mark.parametrize("fmt", ["pcm", "wav", "sse"])
async def test_unsupported_lang_over_post_is_400_before_any_audio(
    model_server: RunningServer, fmt: str
) -> None:
    """A status sent before the refusal would be an empty 200 (pcm) or a bare 44-byte WAV header."""
    async with httpx.AsyncClient(timeout=60) as client:
        refused = await client.post(
            model_server.http_url + "/invocations", json={"text": "Guten Tag.", "lang": "de", "format": fmt}
        )
    assert refused.status_code == 400
    assert refused.headers["content-type"] == "application/json"
    assert refused.json()["code"] == "unsupported_lang"


async def test_a_400_digit_number_is_spoken_digit_by_digit(model_server: RunningServer) -> None:
    """misaki's number-to-words overflowed at ~307 digits and the whole request failed (engine_failed).

    The number is about 80 s of speech, so the test listens to the first stretch of it (several seconds
    of digits: a number said as words would be far shorter) and then barges in.
    """
    digits = "4" * 400
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(text=digits, request_id="digits", speed=2.0))
        start = json.loads(await ws.recv())
        assert start["type"] == "synthesis_start", start
        heard = 0
        while heard < 5 * 2 * 24_000:  # five seconds of audio, all of it digits
            frame = await ws.recv()
            if isinstance(frame, str) and '"word_timings"' in frame:
                continue  # the timings of the digits ahead of their audio
            assert isinstance(frame, bytes), frame  # not engine_failed
            heard += len(frame)
        await ws.send(Cancel().to_wire())
        await ws.send(dumps(text="Done.", request_id="after"))
        transcript = await read_transcript(ws, ends=2)
    assert [f["type"] for f in transcript.frames if f["type"] in ("cancelled", "error")] == ["cancelled"]
    assert transcript.end_of("after")["type"] == "synthesis_complete"
