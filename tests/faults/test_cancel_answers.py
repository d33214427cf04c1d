"""Every ``cancel`` gets its ``cancelled``, in order, however many are interleaved.

The protocol (``strands_kokoro.protocol.Cancelled``): exactly one answer per cancel read, also one that
drops nothing and one sent after ``close``; only a session that ends first leaves a cancel unanswered.
Against the REAL model server; the close cases against an in-process server with a slow fake engine,
where "the request in flight" lasts long enough to be sure of.
"""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedOK

from strands_kokoro.protocol import WS_PATH, Cancel, Close, control_object
from tests.faults.id_engine import IdEngine
from tests.model_server_process import RunningServer, running_app
from tests.tts_container.server_harness import dumps, idle, stats, wait_for_stats
from tts_container.app import create_app

pytestmark = pytest.mark.anyio

WAIT_S = 120.0
# Four sentences, one engine segment each, long enough that the first one's audio leaves on its own.
FOUR = " ".join(f"Sentence {n} is long enough to fill a few frames of audio by itself." for n in range(4))


async def controls_until(ws: ClientConnection, done: int, kind: str) -> list[dict[str, object]]:
    """Every control frame read until ``done`` frames of type ``kind`` arrived (audio is skipped)."""
    seen: list[dict[str, object]] = []
    async with asyncio.timeout(WAIT_S):
        while sum(frame["type"] == kind for frame in seen) < done:
            payload = await ws.recv()
            if (frame := control_object(payload)) is not None:
                seen.append(frame)
    return seen


@pytest.mark.slow
async def test_forty_cancels_interleaved_with_forty_requests_get_forty_answers_in_order(
    model_server: RunningServer,
) -> None:
    async with connect(model_server.ws_url + WS_PATH) as ws:
        for index in range(40):
            await ws.send(dumps(text=f"Request number {index}.", request_id=f"r{index}"))
            await ws.send(Cancel().to_wire())
        frames = await controls_until(ws, 40, "cancelled")
        await ws.send(dumps(text="Still here.", request_id="after"))
        rest = await controls_until(ws, 1, "synthesis_complete")
    answers = [frame for frame in frames if frame["type"] == "cancelled"]
    assert len(answers) == 40
    # Each cancel dropped the one request sent before it (or nothing, if that one had completed).
    assert all(answer["dropped"] in (0, 1) for answer in answers), answers
    assert sum(int(str(answer["dropped"])) for answer in answers) >= 39
    assert not [frame for frame in frames if frame["type"] == "error"]
    assert rest[-1]["request_id"] == "after"


async def test_a_cancel_after_close_is_answered_and_the_queue_is_dropped() -> None:
    """The client of an abandoned turn says close and cancel (either order): nothing more is spoken."""
    engine = IdEngine(delay_s=0.3)
    async with running_app(create_app(lambda: engine)) as address:
        for first, second in ((Close(), Cancel()), (Cancel(), Close())):
            before = await stats(address)
            async with connect(f"ws://{address}{WS_PATH}") as ws:
                for index in range(5):
                    await ws.send(dumps(text=FOUR, request_id=f"r{index}"))
                while not isinstance(await ws.recv(), bytes):  # r0 is being spoken
                    pass
                await ws.send(first.to_wire())
                await ws.send(second.to_wire())
                frames: list[dict[str, object]] = []
                with pytest.raises(ConnectionClosedOK):  # the server closes the session (1000)
                    async with asyncio.timeout(WAIT_S):
                        while True:
                            if (frame := control_object(await ws.recv())) is not None:
                                frames.append(frame)
            settled = await wait_for_stats(address, idle, timeout_s=WAIT_S)
            kinds = [frame["type"] for frame in frames]
            assert kinds.count("cancelled") == 1, kinds
            assert "synthesis_complete" not in kinds, kinds  # nothing queued was spoken after all
            [answer] = [frame for frame in frames if frame["type"] == "cancelled"]
            assert answer["dropped"] == 5, answer
            assert settled["requests_cancelled"] - before["requests_cancelled"] == 5


async def test_a_client_that_disconnects_after_close_stops_the_queue() -> None:
    """``close`` finishes the queue only for a client still there to hear it."""
    engine = IdEngine(delay_s=0.3)
    async with running_app(create_app(lambda: engine)) as address:
        before, made_before = await stats(address), engine.segments_made  # the warm-up made some
        ws = await connect(f"ws://{address}{WS_PATH}")
        for index in range(6):
            await ws.send(dumps(text=FOUR, request_id=f"r{index}"))
        while not isinstance(await ws.recv(), bytes):
            pass
        await ws.send(Close().to_wire())
        ws.transport.abort()
        settled = await wait_for_stats(address, idle, timeout_s=WAIT_S)
        made_after = engine.segments_made - made_before
        assert settled["requests_cancelled"] - before["requests_cancelled"] >= 5, settled
        assert settled["requests_completed"] == before["requests_completed"]
        # 6 requests x 4 sentences would be 24 segments; the queue stopped with the one in flight.
        assert made_after <= 3, made_after


@pytest.mark.slow
async def test_close_then_cancel_on_an_idle_session_always_ends_it_and_answers_what_it_read(
    model_server: RunningServer,
) -> None:
    """A blind fault battery found it: with nothing queued, ``close`` lets the session end at once, and a
    ``cancel`` read just then used to drop that end (2-4% of sessions stayed open for ever). Each of
    these sessions must close (an idle one closes in milliseconds: 10 s is a bound, not a timing); a
    cancel it answered was answered before the close frame."""
    address = model_server.http_url.removeprefix("http://")
    for attempt in range(100):
        sequence = (Close(), Close(), Cancel()) if attempt % 2 else (Close(), Cancel(), Cancel())
        async with connect(f"ws://{address}{WS_PATH}") as ws:
            await ws.recv()  # session_start
            for message in sequence:
                await ws.send(message.to_wire())
            frames: list[dict[str, object]] = []
            with pytest.raises(ConnectionClosedOK):  # the server ends the session (1000)
                async with asyncio.timeout(10.0):
                    while True:
                        if (frame := control_object(await ws.recv())) is not None:
                            frames.append(frame)
        answers = [frame for frame in frames if frame["type"] == "cancelled"]
        assert len(answers) <= 2 and all(a["dropped"] == 0 for a in answers), (sequence, frames)
    await wait_for_stats(address, lambda s: s["sessions_active"] == 0, timeout_s=WAIT_S)
