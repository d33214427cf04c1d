"""The POST /invocations session against the REAL model server: what this transport does its own way.

The whole session contract (``session_contract.py``) runs on the WebSocket and SageMaker bidi sessions;
here, what only this one does: one streamed POST per request (queued, in order, each with its own
voice, rate and speed in the body), the server's SSE events and error bodies turned into the same
events, a cancel that aborts the POST in flight, and a host that does not answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
import pytest

from strands_kokoro.protocol import (
    SAMPLE_WIDTH_BYTES,
    AudioData,
    Cancelled,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    audio_ms,
    parse_error_body,
)
from strands_kokoro.sessions import open_session
from strands_kokoro.sessions.base import SessionClosedError
from tests.model_server_process import RunningServer, free_port
from tests.strands_kokoro.session_contract import WAIT_S, audio_of, completed, read_until, three_cancels

pytestmark = pytest.mark.anyio

TEXT = "Speed changes the length of the audio."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_requests_stream_in_order_with_their_own_rate_speed_and_errors(
    model_server: RunningServer,
) -> None:
    async with open_session(model_server.http_url) as session:
        events = session.events()
        await session.send(SynthesizeRequest(TEXT, request_id="normal", sample_rate=16_000))
        await session.send(SynthesizeRequest(TEXT, request_id="fast", speed=2.0, sample_rate=16_000))
        await session.send(SynthesizeRequest("Hello.", request_id="bad", voice="no_such_voice"))
        await session.send(SynthesizeRequest("Still here.", request_id="good"))
        got = await read_until(events, completed("normal", "fast", "bad", "good"))
        await session.close()
        with anyio.fail_after(WAIT_S):
            rest = [event async for event in events]  # close ends the stream
    assert rest == []
    ends = [e for e in got if isinstance(e, SynthesisCompleted | ServerError)]
    assert [e.request_id for e in ends] == ["normal", "fast", "bad", "good"]
    # Each request's frames sit between its start and its end, and what arrived is what it reports.
    starts = {e.request_id: e for e in got if isinstance(e, SynthesisStarted)}
    current = None
    for event in got:
        if isinstance(event, SynthesisStarted):
            current = event.request_id
        elif isinstance(event, AudioData):
            assert event.request_id == current
        elif isinstance(event, SynthesisCompleted):
            assert event.request_id == current
            pcm = audio_of(got, current)
            assert pcm and len(pcm) % SAMPLE_WIDTH_BYTES == 0 and event.chunks >= 1
            assert abs(event.audio_ms - audio_ms(len(pcm), starts[current].sample_rate)) < 1.0
            current = None
    assert starts["normal"].sample_rate == starts["fast"].sample_rate == 16_000
    assert starts["good"].sample_rate == 24_000
    assert 0 < len(audio_of(got, "fast")) < 0.8 * len(audio_of(got, "normal"))
    [error] = [e for e in got if isinstance(e, ServerError)]
    assert (error.request_id, error.code) == ("bad", "unknown_voice") and error.message
    assert "bad" not in starts and not audio_of(got, "bad")


async def test_cancel_aborts_the_post_in_flight_and_drops_the_queued_ones(
    model_server: RunningServer,
) -> None:
    async with open_session(model_server.http_url) as session:
        events = session.events()
        for i in range(3):
            await session.send(SynthesizeRequest("It keeps the engine busy. " * 8, request_id=f"q{i}"))
        got = await read_until(events, lambda c: any(isinstance(e, AudioData) for e in c))
        await session.cancel()
        got += await read_until(events, lambda c: any(isinstance(e, Cancelled) for e in c))
        await session.send(SynthesizeRequest("Back again.", request_id="after"))
        got += await read_until(events, completed("after"))
        await session.close()
    [cancelled] = [e for e in got if isinstance(e, Cancelled)]
    assert cancelled.dropped == 3  # the one in flight and the two queued
    assert {e.request_id for e in got if isinstance(e, SynthesisStarted)} == {"q0", "after"}
    assert [e.request_id for e in got if isinstance(e, SynthesisCompleted)] == ["after"]
    assert audio_of(got, "after")


async def test_every_cancel_gets_its_own_cancelled_as_on_the_websocket_route(
    model_server: RunningServer,
) -> None:
    dropped, after = await three_cancels(lambda: open_session(model_server.http_url))
    assert dropped == [2, 0, 0] and after  # both requests were still queued or in flight


async def test_a_host_that_does_not_answer_raises_session_closed() -> None:
    with anyio.fail_after(WAIT_S), pytest.raises(SessionClosedError):
        async with open_session(f"http://127.0.0.1:{free_port()}", timeout=5.0) as session:
            events = session.events()
            await session.send(SynthesizeRequest("Nobody is listening.", request_id="r1"))
            await anext(events)


PIECE_BYTES = 1_001  # odd: the response reaches the client cut mid-line, mid-base64 and mid-sample


@asynccontextmanager
async def odd_piece_relay(target_url: str) -> AsyncIterator[str]:
    """A real TCP relay in front of the model server that passes its responses on in ``PIECE_BYTES``
    pieces, each flushed on its own, so the client's socket reads end at odd offsets of the body."""
    target = urlsplit(target_url)
    assert target.hostname is not None and target.port is not None

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, piece: int | None) -> None:
        try:
            while data := await reader.read(65_536):
                for start in range(0, len(data), piece or len(data)):
                    writer.write(data[start : start + (piece or len(data))])
                    await writer.drain()
                    if piece:
                        await asyncio.sleep(0.001)  # one piece per segment the client reads
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(target.hostname, target.port)
        async with anyio.create_task_group() as pipes:
            pipes.start_soon(pipe, client_reader, server_writer, None)
            pipes.start_soon(pipe, server_reader, client_writer, PIECE_BYTES)

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}"


async def test_a_response_read_in_odd_pieces_gives_the_same_audio_byte_for_byte(
    model_server: RunningServer,
) -> None:
    """HTTP chunks may end anywhere (mid SSE line, mid base64, mid sample): the session's audio is the
    same, byte for byte, as when read from the server directly (Kokoro is deterministic)."""
    audio: dict[str, bytes] = {}
    async with odd_piece_relay(model_server.http_url) as relay_url:
        for name, url in (("direct", model_server.http_url), ("odd pieces", relay_url)):
            async with open_session(url) as session:
                events = session.events()
                await session.send(SynthesizeRequest(TEXT, request_id="r1", sample_rate=16_000))
                audio[name] = audio_of(await read_until(events, completed("r1")), "r1")
                await session.close()
    assert len(audio["odd pieces"]) > 20 * PIECE_BYTES  # the body really came in many pieces
    assert audio["odd pieces"] == audio["direct"]


def test_error_bodies_map_to_coded_errors() -> None:
    flat = parse_error_body(
        b'{"type": "error", "code": "bad_speed", "message": "too fast"}', request_id="r", status=400
    )
    assert (flat.code, flat.message) == ("bad_speed", "too fast")
    nested = parse_error_body(
        b'{"error": {"code": "unknown_voice", "message": "no"}}', request_id="r", status=400
    )
    assert nested.code == "unknown_voice"
    opaque = parse_error_body(b"<html>bad gateway</html>", request_id="r", status=502)
    assert opaque.code == "http_502" and "502" in opaque.message
