"""Text with nothing speakable, or in a script the voice cannot read, gets a code; and
what the server leaves out or reads differently before G2P (emoji, doubled marks, line breaks).

Against the REAL model server (onnx engine, misaki G2P), on both routes, with the same code for the same
input: before, combining marks or zero-width spaces alone gave a WebSocket ``synthesis_complete`` with no
audio and an empty 200 on POST, and 30 characters of Arabic, Hebrew or CJK with an English voice gave
13-18 s of letter names. After every refusal the session goes on.
"""

from __future__ import annotations

import httpx
import pytest
from websockets.asyncio.client import connect

from strands_kokoro.protocol import WS_PATH, ErrorCode
from tests.model_server_process import RunningServer
from tests.tts_container.server_harness import Response, dumps, read_response

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

NOTHING = {
    "combining marks": "\u0301\u0301\u0308\u0308\u0323",
    "zero-width spaces": "\u200b\u200b\u200b",
    "joiners and a BOM": "\u200d\u200c\ufeff",
    "bidi controls": "\u202e\u202d\u2066",
    "tag characters": "\U000e0041\U000e0042",
    "private use": "\ue000\ue001",
    "punctuation": "... !!! ???",
    "a symbol with no sound": "#",  # passes the text check; the G2P makes nothing of it
    "only emoji": "😀🐱🎉",  # eSpeak said "grinning cat party", with no written word to caption it
    "emoji sequences": "👍🏽 🇺🇸 👨‍👩‍👧",
}
FOREIGN = {
    "Arabic": "مرحبا بكم في هذا المكان الجميل جدا",
    "Hebrew": "שלום עולם זה טקסט בעברית יפה מאוד",
    "Chinese": "你好世界这是一个中文句子我们测试一下",
    "Japanese": "こんにちは世界、今日はいい天気ですね",
    "Cyrillic": "Привет мир, это русский текст",
}
CASES = [(text, ErrorCode.NOTHING_TO_SAY) for text in NOTHING.values()] + [
    (text, ErrorCode.UNSUPPORTED_SCRIPT) for text in FOREIGN.values()
]
IDS = [*NOTHING, *FOREIGN]


@pytest.mark.parametrize(("text", "code"), CASES, ids=IDS)
async def test_post_answers_a_coded_422_never_an_empty_200(
    model_server: RunningServer, text: str, code: ErrorCode
) -> None:
    async with httpx.AsyncClient(timeout=120) as http:
        for fmt in ("pcm", "wav", "sse"):
            body = {"text": text, "format": fmt, "request_id": "r1"}
            response = await http.post(model_server.http_url + "/invocations", json=body)
            assert response.status_code == 422, (fmt, response.status_code, response.content[:100])
            error = response.json()
            assert (error["type"], error["code"], error["request_id"]) == ("error", code, "r1")
            assert error["message"] and text not in error["message"]


async def test_the_websocket_answers_each_in_its_place_and_the_session_goes_on(
    model_server: RunningServer,
) -> None:
    async with connect(model_server.ws_url + WS_PATH) as ws:
        for index, (text, _) in enumerate(CASES):
            await ws.send(dumps(text=text, request_id=f"r{index}"))
        await ws.send(dumps(text="Still here.", request_id="after"))
        responses = [await read_response(ws) for _ in range(len(CASES) + 1)]
    for index, (response, (_, code)) in enumerate(zip(responses, CASES, strict=False)):
        assert response.end is not None and not response.audio, (index, response.end)
        assert (response.end["type"], response.end["code"]) == ("error", code), response.end
        assert response.end["request_id"] == f"r{index}"
    last = responses[-1]
    assert last.end is not None and last.end["type"] == "synthesis_complete" and last.pcm


async def test_a_word_in_another_script_inside_an_english_sentence_is_left_out_not_spelled(
    model_server: RunningServer,
) -> None:
    """A minority of foreign letters: the sentence is spoken without them (no "Chinese letter" x2)."""
    async with connect(model_server.ws_url + WS_PATH) as ws:
        await ws.send(dumps(text="The word 你好 means hello.", request_id="mixed"))
        await ws.send(dumps(text="The word means hello.", request_id="plain"))
        mixed, plain = await read_response(ws), await read_response(ws)
    assert mixed.end is not None and plain.end is not None
    assert mixed.end["type"] == plain.end["type"] == "synthesis_complete"
    assert [w["text"] for w in mixed.end["words"]] == [w["text"] for w in plain.end["words"]]
    assert len(mixed.pcm) < 1.2 * len(plain.pcm), (len(mixed.pcm), len(plain.pcm))


LEFT_OUT = {
    "emoji": ("I love cats 🐱 a lot 🎉.", "I love cats a lot."),  # eSpeak said them by name
    "terminal colours": ("Hello \x1b[31mWorld\x1b[0m again.", "Hello World again."),  # "31 meters"
    "a NUL": ("Hello\x00 there.", "Hello there."),  # it reached a caption word
    # fault battery 4: a no-break space merged five caption words into two, a zero-width joiner split a
    # word (a quarter longer), marks and a right-to-left override stayed inside caption words
    "no-break spaces": ("Hello\u00a0there, my\u00a0good\u00a0friend.", "Hello there, my good friend."),
    "a joiner inside a word": ("Hel\u200dlo there.", "Hello there."),
    "marks inside words": (
        "\ufeffHello \u200fthere\u200e, soft\u00adware \u202efriend.",
        "Hello there, software friend.",
    ),
}


@pytest.mark.parametrize(("written", "plain"), LEFT_OUT.values(), ids=list(LEFT_OUT))
async def test_what_is_not_read_aloud_is_left_out_of_a_sentence(
    model_server: RunningServer, written: str, plain: str
) -> None:
    """A blind fault battery heard these; the sentence around them is spoken as it is without them."""
    with_them, without = await _both(model_server, written, plain)
    assert with_them.end is not None and without.end is not None
    assert [w["text"] for w in with_them.end["words"]] == [w["text"] for w in without.end["words"]]
    assert with_them.pcm == without.pcm  # the same text reached the engine, which renders deterministically


READ_AS = {
    # Pictographs by Unicode, but marks and symbols a reader says: they were dropped with the emoji.
    "a doubled exclamation": ("Wow‼ That is great.", "Wow! That is great."),
    "an exclamation question": ("Really⁉ That is great.", "Really? That is great."),
    "a two-way arrow": ("Trains go Paris ↔ Lyon daily.", "Trains go Paris to and from Lyon daily."),
    # A blank line ends a sentence, a line break is a space: misaki merged the words around a line break
    # into one token (one caption word "nice\nBerlin", no pause; a heading ran into the next words).
    "a blank line after a heading": (
        "Getting Started\n\nHere are the steps.",
        "Getting Started. Here are the steps.",
    ),
    "a blank line after a colon": ("The steps:\r\n\r\nInstall it.", "The steps: Install it."),
    "a line break": ("Paris is nice\nBerlin is big.", "Paris is nice Berlin is big."),
}


@pytest.mark.parametrize(("written", "said"), READ_AS.values(), ids=list(READ_AS))
async def test_marks_symbols_and_line_breaks_are_read_as_a_reader_reads_them(
    model_server: RunningServer, written: str, said: str
) -> None:
    as_written, as_said = await _both(model_server, written, said)
    assert as_written.end is not None and as_written.end["type"] == "synthesis_complete"
    assert as_written.pcm == as_said.pcm  # the same phonemes reached the engine
    assert not any("\n" in w["text"] for w in as_written.end["words"])  # every caption word is one word


async def _both(model_server: RunningServer, written: str, other: str) -> tuple[Response, Response]:
    """Both texts spoken on one session, in order: their two responses."""
    async with connect(model_server.ws_url + WS_PATH) as ws:
        await ws.send(dumps(text=written, request_id="written"))
        await ws.send(dumps(text=other, request_id="other"))
        return await read_response(ws), await read_response(ws)
