"""Refusals of a session's requests come in request order: never before the audio of earlier requests.

A client matches answers to requests by order as well as by id (architecture §3), so a refusal found
while reading a message (its settings, its text, its type) or at admission (``overloaded``) waits for the
audio of every request sent before it. In-process servers with :class:`~tests.faults.id_engine.IdEngine`
pace the engine.
"""

from __future__ import annotations

import pytest

from strands_kokoro.protocol import MAX_QUEUED_REQUESTS, MAX_TEXT_CHARS, WS_PATH
from tests.faults.id_engine import IdEngine, expected_pcm
from tests.faults.wire import read_transcript
from tests.model_server_process import running_app
from tests.tts_container.server_harness import dumps, open_ws
from tts_container.app import create_app

pytestmark = pytest.mark.anyio


async def test_refusals_of_later_requests_never_overtake_earlier_audio() -> None:
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


async def test_overloaded_answers_wait_for_the_audio_before_them() -> None:
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
