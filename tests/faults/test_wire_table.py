"""Hostile and broken input, one row each, over real sockets: every bad WebSocket message and every bad
POST body gets its coded answer, and a valid request right after it (same session, same server) still
gets its audio. Covers every code of architecture §3's error list that a client can provoke,
non-UTF-8, non-objects, huge and deeply nested JSON, NaN/Infinity, big integers, control characters,
emoji-only and punctuation-only text, and frames of 100 KB and 2 MB.

Outcomes: an error ``code``; ``SPOKEN`` (odd but speakable text: a ``synthesis_complete``); or, for a
frame over the WebSocket layer's own limit (1 MiB), the standard close 1009 "message too big", after which
a new session on the same server must work.

Where the answer comes from the protocol and the session (parsing, limits, refusals), the row runs
against the server's real app in-process with :class:`~tests.faults.id_engine.IdEngine` (fast, and the
follow-up's audio is checked byte for byte). Rows whose text reaches the engine (``real=True``: odd text
that must still be spoken, languages) run against the REAL model server.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from strands_kokoro.protocol import MAX_MESSAGE_BYTES, MAX_TEXT_CHARS, WS_PATH
from tests.faults.id_engine import IdEngine, expected_pcm
from tests.faults.wire import read_transcript
from tests.model_server_process import RunningServer, running_app
from tests.tts_container.server_harness import dumps, open_ws
from tts_container.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SPOKEN = "spoken"
TOO_BIG_FOR_THE_SOCKET = "close_1009"
BIG_INT = "1" + "0" * 4_300
DEEP = "[" * 30_000 + "]" * 30_000  # 60 KB: under the size limit, far past the parser's recursion limit
TWO_MB = 2 * 1024 * 1024


def synth(**fields: object) -> str:
    return json.dumps({"type": "synthesize", **fields})


@dataclass(frozen=True)
class Row:
    name: str
    payload: str | bytes
    outcome: str  # an error code, SPOKEN or TOO_BIG_FOR_THE_SOCKET
    request_id: str | None = None  # the request id the answer must carry
    real: bool = False  # needs the real engine


WS_ROWS = [
    Row("not json", "{not json", "bad_json"),
    Row("empty text frame", "", "bad_json"),
    Row("truncated object", '{"type": "synthesize", "text": "Hi', "bad_json"),
    Row("non-utf8 binary", b"\xff\xfe\x00{", "bad_utf8"),
    Row("overlong utf8 encoding", b'{"text": "\xc0\xaf"}', "bad_utf8"),
    Row("json array", "[1, 2]", "bad_message"),
    Row("json string", '"Hello there."', "bad_message"),
    Row("json number", "42", "bad_message"),
    Row("json null", "null", "bad_message"),
    Row("empty object", "{}", "missing_text"),
    Row("no text", synth(voice="af_heart"), "missing_text"),
    Row("null text", synth(text=None), "missing_text"),
    Row("empty text", synth(text=""), "missing_text"),
    Row("whitespace text", synth(text=" \n\t "), "missing_text"),
    Row("text is a number", synth(text=12), "bad_message"),
    Row("text is an object", synth(text={"a": 1}), "bad_message"),
    Row("text too long", synth(text="a" * (MAX_TEXT_CHARS + 1)), "text_too_long"),
    Row("unknown voice", synth(text="Hi.", voice="zz_nobody", request_id="v"), "unknown_voice", "v"),
    Row("voice is a list", synth(text="Hi.", voice=["af_heart"]), "bad_message"),
    Row("speed too fast", synth(text="Hi.", speed=100), "bad_speed"),
    Row("speed is a string", synth(text="Hi.", speed="fast"), "bad_speed"),
    Row("speed is true", synth(text="Hi.", speed=True), "bad_speed"),
    Row("speed NaN", '{"text": "Hi.", "speed": NaN}', "bad_speed"),
    Row("speed Infinity", '{"text": "Hi.", "speed": Infinity}', "bad_speed"),
    Row("speed -Infinity", '{"text": "Hi.", "speed": -Infinity}', "bad_speed"),
    Row("speed 4301 digits", '{"text": "Hi.", "speed": ' + BIG_INT + "}", "bad_json"),
    Row("speed 1e999", '{"text": "Hi.", "speed": 1e999}', "bad_speed"),
    Row("speed 400 digits", '{"text": "Hi.", "speed": ' + "1" * 400 + "}", "bad_speed"),
    Row("speed -400 digits", '{"text": "Hi.", "speed": -' + "9" * 400 + "}", "bad_speed"),
    Row("sample rate unsupported", synth(text="Hi.", sample_rate=12_345), "bad_sample_rate"),
    Row("sample rate float", synth(text="Hi.", sample_rate=24_000.0), "bad_sample_rate"),
    Row("sample rate list flood", synth(text="Hi.", sample_rate=[1] * 20_000), "bad_sample_rate"),
    Row("lang de", synth(text="Hallo.", lang="de", request_id="de"), "unsupported_lang", "de", real=True),
    Row("lang ko", synth(text="Hi.", lang="ko"), "unsupported_lang", real=True),
    Row("lang is a number", synth(text="Hi.", lang=7), "bad_message"),
    Row("unknown type", json.dumps({"type": "dance", "request_id": "t"}), "unknown_type", "t"),
    Row("type is a list", json.dumps({"type": ["synthesize"], "text": "Hi."}), "unknown_type"),
    Row("request id too long", synth(text="Hi.", request_id="x" * 60_000), "bad_message"),
    Row("request id is a number", synth(text="Hi.", request_id=7), "bad_message"),
    Row("deeply nested json", DEEP, "bad_json"),
    Row("nested inside a field", '{"text": "Hi.", "voice": ' + DEEP[:40_000] + "}", "bad_json"),
    Row("100 KB frame", synth(text="a" * 100_000), "message_too_large"),
    Row("100 KB binary frame", b" " * 100_000, "message_too_large"),
    Row("2 MB frame", b"{" + b" " * TWO_MB + b"}", TOO_BIG_FOR_THE_SOCKET),
    Row("control characters", synth(text="Bell\u0007 null\u0000 escape\u001b done."), SPOKEN, real=True),
    # Nothing a voice can say: coded, never a silent completion; the real G2P and the
    # fake engine answer alike, because the text is judged before any engine sees it. Emoji are not
    # read aloud (eSpeak says their names), so emoji alone is nothing to say.
    Row("emoji only", synth(text="😀🎉🐙", request_id="e"), "nothing_to_say", "e", real=True),
    Row("punctuation only", synth(text="?!... ;;; --", request_id="p"), "nothing_to_say", "p"),
    Row("combining marks only", synth(text="\u0301\u0308\u0323"), "nothing_to_say"),
    Row("zero-width spaces only", synth(text="\u200b\u200b"), "nothing_to_say"),
    Row("Arabic with an English voice", synth(text="مرحبا بكم في هذا المكان"), "unsupported_script"),
    Row("right-to-left and zero-width", synth(text="Hi\u200b\u202e there."), SPOKEN, real=True),
]


@asynccontextmanager
async def server(real: bool, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """``host:port`` of the real model server, or of the real app with a fake engine served here."""
    if real:
        model_server: RunningServer = request.getfixturevalue("model_server")
        yield f"127.0.0.1:{model_server.port}"
        return
    async with running_app(create_app(IdEngine)) as address:
        yield address


async def next_answer(ws: ClientConnection) -> dict[str, object]:
    """The answer to one message: its error, or the synthesis_complete of a request that was spoken."""
    transcript = await read_transcript(ws, ends=1)
    return transcript.frames[-1]


async def valid_request_succeeds(ws: ClientConnection, real: bool) -> None:
    await ws.send(dumps(text="Hi.", request_id="valid"))
    transcript = await read_transcript(ws, ends=1)
    assert transcript.end_of("valid")["type"] == "synthesis_complete", transcript.frames[-1]
    pcm = transcript.pcm_of("valid")
    assert len(pcm) > 4_800 if real else pcm == expected_pcm("Hi.")


async def test_the_tables_are_big_enough() -> None:
    assert len([r for r in WS_ROWS if r.outcome != SPOKEN]) >= 25 and len(POST_ROWS) >= 10


@pytest.mark.parametrize("row", WS_ROWS, ids=lambda row: row.name)
async def test_bad_ws_message_then_a_valid_request_on_the_same_session(
    request: pytest.FixtureRequest, row: Row
) -> None:
    async with server(row.real, request) as address:
        url = f"ws://{address}{WS_PATH}"
        async with open_ws(url, max_size=None) as ws:
            await ws.send(row.payload)
            if row.outcome != TOO_BIG_FOR_THE_SOCKET:
                answer = await next_answer(ws)
                if row.outcome == SPOKEN:
                    assert answer["type"] == "synthesis_complete", answer
                else:
                    assert (answer["type"], answer["code"]) == ("error", row.outcome), answer
                    assert answer["request_id"] == row.request_id
                    assert len(json.dumps(answer)) < 600  # never an echo of what was sent
                await valid_request_succeeds(ws, row.real)
                return
            with pytest.raises(ConnectionClosed):
                await ws.recv()
            assert ws.close_code == 1009  # the WebSocket layer's own coded refusal
        async with open_ws(url) as ws:  # the server itself goes on
            await valid_request_succeeds(ws, row.real)


# ------------------------------------------------------------------------------------------- POST


@dataclass(frozen=True)
class PostRow:
    name: str
    body: bytes
    status: int
    code: str
    real: bool = False


def body(**fields: object) -> bytes:
    return json.dumps(fields).encode()


POST_ROWS = [
    PostRow("not json", b"{not json", 400, "bad_json"),
    PostRow("empty body", b"", 400, "bad_json"),
    PostRow("non-utf8", b"\xff\xfe\x00", 400, "bad_utf8"),
    PostRow("json array", b"[1, 2]", 400, "bad_message"),
    PostRow("json string", b'"Hello."', 400, "bad_message"),
    PostRow("missing text", body(voice="af_heart"), 400, "missing_text"),
    PostRow("text too long", body(text="a" * (MAX_TEXT_CHARS + 1)), 400, "text_too_long"),
    PostRow("unknown voice", body(text="Hi.", voice="zz_nobody"), 400, "unknown_voice"),
    PostRow("speed NaN", b'{"text": "Hi.", "speed": NaN}', 400, "bad_speed"),
    PostRow("speed Infinity", b'{"text": "Hi.", "speed": Infinity}', 400, "bad_speed"),
    PostRow("sample rate list", body(text="Hi.", sample_rate=[1] * 20_000), 400, "bad_sample_rate"),
    PostRow("format flac", body(text="Hi.", format="flac"), 400, "bad_format"),
    PostRow("combining marks only", body(text="\u0301\u0308"), 422, "nothing_to_say"),
    PostRow("CJK, English voice", body(text="你好世界", format="wav"), 422, "unsupported_script"),
    PostRow("lang de (pcm)", body(text="Hallo.", lang="de"), 400, "unsupported_lang", real=True),
    PostRow(
        "lang de (wav)", body(text="Hallo.", lang="de", format="wav"), 400, "unsupported_lang", real=True
    ),
    PostRow("4301-digit integer", b'{"text": "Hi.", "speed": ' + BIG_INT.encode() + b"}", 400, "bad_json"),
    PostRow("deeply nested", DEEP.encode(), 400, "bad_json"),
    PostRow("request id too long", body(text="Hi.", request_id="x" * 60_000), 400, "bad_message"),
    PostRow("2 MB body", b"{" + b" " * TWO_MB + b"}", 413, "message_too_large"),
    PostRow("just over the limit", b" " * (MAX_MESSAGE_BYTES + 1), 413, "message_too_large"),
]


@pytest.mark.parametrize("row", POST_ROWS, ids=lambda row: row.name)
async def test_bad_post_body_then_a_valid_post_succeeds(request: pytest.FixtureRequest, row: PostRow) -> None:
    headers = {"content-type": "application/json"}
    async with server(row.real, request) as address, httpx.AsyncClient(timeout=60) as client:
        url = f"http://{address}/invocations"
        refused = await client.post(url, content=row.body, headers=headers)
        assert refused.status_code == row.status, refused.content[:200]
        assert refused.json()["code"] == row.code and len(refused.content) < 600
        ok = await client.post(url, json={"text": "Hi."})
    assert ok.status_code == 200
    assert len(ok.content) > 4_800 if row.real else ok.content == expected_pcm("Hi.")
