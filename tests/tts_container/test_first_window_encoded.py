"""A compressed stream's first bytes leave with the first window's PCM, on every route that offers one.

On the REAL model server (onnx engine, real weights; the ``model_server`` fixture) the same text is
asked for in PCM and in each compressed format on ``POST /v1/audio/speech``, ``POST /invocations`` and
the WebSocket session. What the server wrote in one piece keeps its bounds on the wire: an HTTP/1.1
chunk (read with h11, which reports chunk ends) or a WebSocket message. The first PCM piece is the
first window (a request rendered again is the same, sample for sample); the first compressed piece
must decode on its own, as a valid start of its stream, to about that window's audio: less only by what
the codec holds for its next frame, and not the next window's too (which would mean it waited for it).
Order of events, not time: nothing here is timed.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import h11
import pytest
from websockets.asyncio.client import connect

from strands_kokoro.audio_encoding import decode_audio
from strands_kokoro.protocol import WS_PATH, Close, audio_ms, control_object, json_text
from tests.model_server_process import RunningServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TEXT = "The ferry left at dawn, loaded with farmers and their goats. It crossed the river slowly."
RATE = 24_000
HELD_MS = 200.0  # the most a codec keeps back for its next frame (LAME's look-ahead; FLAC's block)
LEAD_MS = 100.0  # the most a codec's start adds (LAME's encoder delay, AAC's priming; Opus trims its own)
REFERENCES: dict[str, list[bytes]] = {}  # the OpenAI route's PCM pieces, asked once per test run


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def post_pieces(http_url: str, path: str, body: dict[str, object]) -> list[bytes]:
    """One POST over a fresh socket: the response body as the server wrote it, one item per HTTP chunk."""
    address = urlsplit(http_url)
    reader, writer = await asyncio.open_connection(address.hostname, address.port)
    connection = h11.Connection(h11.CLIENT)
    payload = json_text(body).encode()
    headers = [
        ("Host", address.netloc),
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(payload))),
        ("Connection", "close"),
    ]
    writer.write(connection.send(h11.Request(method="POST", target=path, headers=headers)) or b"")
    writer.write(connection.send(h11.Data(data=payload)) or b"")
    writer.write(connection.send(h11.EndOfMessage()) or b"")
    pieces: list[bytes] = []
    piece = bytearray()
    try:
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Response):
                assert event.status_code == 200, event
            elif isinstance(event, h11.Data):
                piece += event.data
                if event.chunk_end:
                    pieces.append(bytes(piece))
                    piece.clear()
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return pieces
    finally:
        writer.close()
        await writer.wait_closed()


async def ws_pieces(ws_url: str, text: str, fmt: str) -> list[bytes]:
    """One ``synthesize`` in ``fmt`` on a fresh session: its audio, one item per binary message."""
    async with connect(f"{ws_url}{WS_PATH}", max_size=None) as ws:
        await ws.send(json_text({"type": "synthesize", "text": text, "format": fmt}))
        pieces: list[bytes] = []
        while True:
            message = await ws.recv()
            obj = control_object(message)
            if obj is None:
                assert isinstance(message, bytes)
                pieces.append(message)
            elif obj["type"] in ("synthesis_complete", "error"):
                assert obj["type"] == "synthesis_complete", obj
                await ws.send(Close().to_wire())
                return pieces


def window_ms(pieces: list[bytes], fmt: str) -> float:
    """The audio of the first piece of a PCM (or WAV: its header first) body."""
    return audio_ms(len(pieces[0]) - (44 if fmt == "wav" else 0), RATE)


def assert_first_piece_is_the_first_window(pieces: list[bytes], fmt: str, reference: list[bytes]) -> None:
    first_window = window_ms(reference, "pcm")
    assert audio_ms(len(reference[1]), RATE) > HELD_MS + LEAD_MS  # a second window would show
    first = audio_ms(len(decode_audio(pieces[0], fmt, RATE)), RATE)  # type: ignore[arg-type]
    assert first_window - HELD_MS <= first <= first_window + LEAD_MS, (fmt, first, first_window)
    whole = audio_ms(len(decode_audio(b"".join(pieces), fmt, RATE)), RATE)  # type: ignore[arg-type]
    spoken = audio_ms(sum(len(piece) for piece in reference), RATE)
    assert spoken - 1.0 <= whole <= spoken + LEAD_MS + 50.0, (fmt, whole, spoken)


@pytest.mark.parametrize("fmt", ["opus", "mp3", "aac", "flac"])
async def test_openai_route_sends_its_first_encoded_bytes_with_the_first_window(
    model_server: RunningServer, fmt: str
) -> None:
    def asked(response_format: str) -> dict[str, object]:
        return {"model": "kokoro", "input": TEXT, "voice": "af_heart", "response_format": response_format}

    if "openai" not in REFERENCES:  # the PCM (and WAV) asked once for every format
        REFERENCES["openai"] = await post_pieces(model_server.http_url, "/v1/audio/speech", asked("pcm"))
        wav = await post_pieces(model_server.http_url, "/v1/audio/speech", asked("wav"))
        assert window_ms(wav, "wav") == window_ms(REFERENCES["openai"], "pcm")  # the same, header first
    reference = REFERENCES["openai"]
    pieces = await post_pieces(model_server.http_url, "/v1/audio/speech", asked(fmt))
    assert_first_piece_is_the_first_window(pieces, fmt, reference)


@pytest.mark.parametrize("fmt", ["opus", "mp3"])
async def test_invocations_sends_its_first_encoded_bytes_with_the_first_window(
    model_server: RunningServer, fmt: str
) -> None:
    reference = await post_pieces(model_server.http_url, "/invocations", {"text": TEXT, "format": "pcm"})
    pieces = await post_pieces(model_server.http_url, "/invocations", {"text": TEXT, "format": fmt})
    assert_first_piece_is_the_first_window(pieces, fmt, reference)


@pytest.mark.parametrize("fmt", ["opus", "mp3"])
async def test_a_session_request_sends_its_first_encoded_bytes_with_the_first_window(
    model_server: RunningServer, fmt: str
) -> None:
    reference = await ws_pieces(model_server.ws_url, TEXT, "pcm")
    pieces = await ws_pieces(model_server.ws_url, TEXT, fmt)
    assert_first_piece_is_the_first_window(pieces, fmt, reference)
