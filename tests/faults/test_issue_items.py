"""Issue 11, item by item: each test failed before its fix (the issue's own reproduction, made exact).

Items 1-4 and 8 run against the REAL model server (``model_server`` fixture, onnx engine) or, where the
engine's pace must be controlled, an in-process server with :class:`~tests.faults.id_engine.IdEngine`.
Item 5 and 6 (the client) are in ``test_speech_faults.py``, item 7 in ``test_local_guards.py``, the
non-reading flood of item 1 in ``test_flood.py``.
"""

from __future__ import annotations

import json

import httpx
import pytest

from strands_kokoro.protocol import MAX_QUEUED_REQUESTS, MAX_TEXT_CHARS, WS_PATH, Cancel, control_object
from tests.faults.id_engine import IdEngine, expected_pcm
from tests.faults.wire import read_transcript
from tests.model_server_process import RunningServer, running_app
from tests.tts_container.server_harness import dumps, open_ws
from tts_container.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BIG_INT = "1" + "0" * 4_300  # 4,301 digits: past Python's int-parsing limit, json.loads raises ValueError


def ws_url(server: RunningServer) -> str:
    return server.ws_url + WS_PATH


# ------------------------------------------------------------------------------------------- item 1


async def test_item1_errors_do_not_echo_a_60000_char_request_id_or_a_list(
    model_server: RunningServer,
) -> None:
    """Each error frame stays small whatever the client sent (the issue saw 60 KB echoed per message)."""
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(type="synthesize", text="hi", request_id="x" * 60_000))
        await ws.send(dumps(type="synthesize", text="hi", sample_rate=[1] * 20_000))
        await ws.send(dumps(type="synthesize", text="hi", voice="v" * 60_000))
        frames = [await ws.recv() for _ in range(3)]
    assert all(isinstance(f, str) and len(f) < 600 for f in frames), [len(f) for f in frames]
    errors = [json.loads(f) for f in frames]
    assert [e["code"] for e in errors] == ["bad_message", "bad_sample_rate", "unknown_voice"]
    assert all(e["request_id"] is None for e in errors)  # an over-long id is never kept


# ------------------------------------------------------------------------------------------- item 2


async def test_item2_a_4301_digit_integer_over_ws_is_bad_json_and_nothing_queued_is_lost(
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


async def test_item2_a_4301_digit_integer_over_post_is_a_coded_400(model_server: RunningServer) -> None:
    body = '{"text": "hi", "sample_rate": ' + BIG_INT + "}"
    async with httpx.AsyncClient(timeout=60) as client:
        refused = await client.post(
            model_server.http_url + "/invocations", content=body, headers={"content-type": "application/json"}
        )
    assert refused.status_code == 400 and refused.json()["code"] == "bad_json"


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


def test_item2_the_clients_frame_parser_survives_a_4301_digit_integer() -> None:
    """The receiving side's classifier: not a control frame (never an exception in the receiver task)."""
    frame = '{"type": "synthesis_complete", "request_id": "r", "audio_ms": ' + BIG_INT + "}"
    assert control_object(frame) is None and control_object(frame.encode()) is None
    assert control_object("[" * 100_000 + "]" * 100_000) is None


# ------------------------------------------------------------------------------------------- item 3


async def test_item3_unsupported_lang_over_ws_is_refused_before_any_audio(
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
async def test_item3_unsupported_lang_over_post_is_400_before_any_audio(
    model_server: RunningServer, fmt: str
) -> None:
    """The issue saw an empty 200 (pcm) and a bare 44-byte WAV header."""
    async with httpx.AsyncClient(timeout=60) as client:
        refused = await client.post(
            model_server.http_url + "/invocations", json={"text": "Guten Tag.", "lang": "de", "format": fmt}
        )
    assert refused.status_code == 400
    assert refused.headers["content-type"] == "application/json"
    assert refused.json()["code"] == "unsupported_lang"


# ------------------------------------------------------------------------------------------- item 4


async def test_item4_a_400_digit_number_is_spoken_digit_by_digit(model_server: RunningServer) -> None:
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


# ------------------------------------------------------------------------------------------- item 8


async def test_item8_unknown_type_keeps_the_request_id(model_server: RunningServer) -> None:
    async with open_ws(ws_url(model_server)) as ws:
        await ws.send(dumps(type="synthesise", text="Hi.", request_id="typo-1"))
        error = json.loads(await ws.recv())
    assert (error["code"], error["request_id"]) == ("unknown_type", "typo-1")


async def test_item8_refusals_of_later_requests_never_overtake_earlier_audio() -> None:
    """Every refusal naming a request comes in request order (architecture §3): those of its settings
    and text found while reading the message (bad_speed, bad_format, missing_text, text_too_long,
    unknown_type) as well as unknown_voice / unsupported_lang / overloaded."""
    engine = IdEngine(delay_s=0.02)
    async with running_app(create_app(lambda: engine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        await ws.send(dumps(text="One. Two. Three.", request_id="a"))
        await ws.send(dumps(text="Hi.", request_id="b", voice="zz_nobody"))
        await ws.send(dumps(text="Hi.", request_id="c", lang="de"))
        await ws.send(dumps(text="Hi.", request_id="e", speed=9))
        await ws.send(dumps(text="Hi.", request_id="f", format="flac"))
        await ws.send(dumps(text=" ", request_id="g"))
        await ws.send(dumps(text="a" * (MAX_TEXT_CHARS + 1), request_id="h"))
        await ws.send(dumps(type="synthesise", text="Hi.", request_id="i"))
        await ws.send(dumps(text="Four.", request_id="d"))
        transcript = await read_transcript(ws, ends=9)
    order = [rid for kind, rid in transcript.kinds() if kind in ("synthesis_complete", "error")]
    assert order == ["a", "b", "c", "e", "f", "g", "h", "i", "d"]
    assert [transcript.end_of(r)["code"] for r in "bcefghi"] == [
        "unknown_voice",
        "unsupported_lang",
        "bad_speed",
        "bad_format",
        "missing_text",
        "text_too_long",
        "unknown_type",
    ]
    assert transcript.pcm_of("a") == expected_pcm("One. Two. Three.")


async def test_item8_overloaded_answers_wait_for_the_audio_before_them() -> None:
    engine = IdEngine(delay_s=0.01)
    n = MAX_QUEUED_REQUESTS + 8
    ids = [f"r{i:02d}" for i in range(n)]
    async with running_app(create_app(lambda: engine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:
        for request_id in ids:
            await ws.send(dumps(text=f"Sentence {request_id}.", request_id=request_id))
        transcript = await read_transcript(ws, ends=n)
    order = [rid for kind, rid in transcript.kinds() if kind in ("synthesis_complete", "error")]
    assert order == ids  # every answer in request order, refusals included
    refused = [r for r in ids if transcript.end_of(r)["type"] == "error"]
    assert refused and all(transcript.end_of(r)["code"] == "overloaded" for r in refused)
    for request_id in set(ids) - set(refused):
        assert transcript.pcm_of(request_id) == expected_pcm(f"Sentence {request_id}.")


# ------------------------------------------------------------------------- found while writing this suite

LONE_SURROGATE = "\\ud800"  # valid JSON (an escape), but no UTF-8 encoding exists for the string it makes


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
