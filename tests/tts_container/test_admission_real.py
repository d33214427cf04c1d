"""Admission on the real model server (real Kokoro weights, its capacity measured from its own speed):
more listeners than it can serve at once, and the one past capacity is refused at once, coded and
retryable, while the listeners it admitted hear every sentence; the refused session stays usable. How
many it admits depends on the machine, so the test opens listeners until one is refused. The timing
of the listeners' audio is tested with a paced engine (test_capacity_with_paced_engine.py) and
measured by benchmarks/capacity.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pytest
from websockets.asyncio.client import ClientConnection

from strands_kokoro.protocol import WS_PATH, Close, ErrorCode
from tests.model_server_process import RunningServer, start_model_server, stop_model_server
from tests.tts_container.server_harness import Response, dumps, open_ws, read_frame, read_response, stats

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ANSWER = (
    "The train to the coast leaves every hour from platform four.",
    "Tickets are cheaper if you book them a day in advance.",
    "Bring a jacket, because the wind by the water is colder than you expect.",
)
MOST_LISTENERS = 8


@pytest.fixture(scope="module")
def measuring_server() -> Iterator[RunningServer]:
    """A server of this module's own, admitting what it measures (the shared one has a fixed ceiling)."""
    server = start_model_server("--no-idle-calibration")
    try:
        yield server
    finally:
        stop_model_server(server)


async def send_answer(ws: ClientConnection, name: str) -> None:
    for index, sentence in enumerate(ANSWER):
        await ws.send(dumps(text=sentence, request_id=f"{name}-{index}"))


async def test_the_listener_past_capacity_is_refused_at_once_and_the_admitted_ones_hear_everything(
    measuring_server: RunningServer,
) -> None:
    address = measuring_server.http_url.removeprefix("http://")
    url = f"ws://{address}{WS_PATH}"
    async with contextlib.AsyncExitStack() as stack:
        admitted: list[tuple[ClientConnection, Response]] = []
        refused: tuple[ClientConnection, Response] | None = None
        for index in range(MOST_LISTENERS):  # until the server says it is full
            ws = await stack.enter_async_context(open_ws(url, max_size=None))
            await send_answer(ws, f"l{index}")
            frame = await read_frame(ws)
            if isinstance(frame, dict) and frame["type"] == "synthesis_start":
                admitted.append((ws, await read_response(ws, start=frame)))
                continue
            assert isinstance(frame, dict) and frame["type"] == "error", frame
            refused = ws, Response(end=frame)
            break
        assert refused is not None, f"{MOST_LISTENERS} listeners at once on two cores, none refused"
        late, refusal = refused
        assert refusal.end is not None and refusal.end["code"] == ErrorCode.OVERLOADED
        assert refusal.end["request_id"] == f"l{len(admitted)}-0" and refusal.end["retry_after_ms"] >= 250
        # The rest of the late answer is refused too (no answer of it was admitted), each in order.
        rest = [await read_response(late) for _ in ANSWER[1:]]
        assert [r.end["code"] for r in rest if r.end] == [ErrorCode.OVERLOADED] * 2
        for ws, first in admitted:  # every admitted listener hears its whole answer
            heard = [first, *[await read_response(ws) for _ in ANSWER[1:]]]
            assert all(r.end is not None and r.end["type"] == "synthesis_complete" and r.audio for r in heard)
        for ws, _ in admitted:  # the admitted listeners leave: their places free at once
            await ws.send(Close().to_wire())
            await ws.wait_closed()
        await asyncio.sleep(0.5)
        await send_answer(late, "again")  # the refused session is still usable
        again = [await read_response(late) for _ in ANSWER]
        assert all(r.end is not None and r.end["type"] == "synthesis_complete" for r in again)
        assert (await stats(address))["answers_refused"] >= 1
        await late.send(Close().to_wire())
