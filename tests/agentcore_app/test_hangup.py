"""The hang-up mechanism on its own: the signal, the wrapper around a turn's events, the ASGI watcher.

The end-to-end proof is in ``tests/faults/test_hangups.py`` (the agent app in its own process, the real
model server); here each piece is driven directly, with an ASGI ``receive`` double where the watcher
needs one (named so), to pin down the rules the fault tests cannot isolate: the cancellation lands
inside the turn and never escapes the wrapper, a hang-up before the first event runs nothing, and a
disconnect after a complete response is no hang-up.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentcore_app.hangup import HangUp, HangUpWatcher, hangup_of, until_hung_up

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Turn:
    """An event stream that yields ``events`` then waits for ever; records how it ended."""

    def __init__(self, events: int) -> None:
        self.events = events
        self.ended: str | None = None
        self.waiting = asyncio.Event()

    async def stream(self) -> AsyncIterator[int]:
        try:
            for index in range(self.events):
                yield index
            self.waiting.set()
            await asyncio.Event().wait()  # a silent tool, a model that holds its last token
        except asyncio.CancelledError:
            self.ended = "cancelled"
            raise
        finally:
            self.ended = self.ended or "closed"


async def test_a_hang_up_from_another_thread_cancels_the_wait_inside_the_turn_and_ends_the_stream() -> None:
    hangup, turn = HangUp(), Turn(events=2)
    got: list[int] = []

    async def hang_up_while_it_waits() -> None:
        await turn.waiting.wait()
        threading.Thread(target=hangup.fire).start()  # from uvicorn's loop, not this one

    events = turn.stream()
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(hang_up_while_it_waits())
        async for event in until_hung_up(events, hangup):
            got.append(event)
    await events.aclose()
    assert got == [0, 1]
    assert turn.ended == "cancelled"  # the cancellation landed in the turn's own wait
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # and did not escape into the caller


async def test_a_hang_up_before_the_first_event_starts_nothing() -> None:
    hangup, turn = HangUp(), Turn(events=3)
    hangup.fire()
    events = turn.stream()
    assert [event async for event in until_hung_up(events, hangup)] == []
    await events.aclose()
    assert turn.ended is None  # never started


async def test_without_a_hang_up_signal_the_events_pass_through() -> None:
    async def three() -> AsyncIterator[int]:
        for index in range(3):
            yield index

    assert [event async for event in until_hung_up(three(), None)] == [0, 1, 2]


def test_the_signal_fires_once_and_tells_late_subscribers_at_once() -> None:
    hangup, calls = HangUp(), []
    unsubscribe = hangup.subscribe(lambda: calls.append("early"))
    removed = hangup.subscribe(lambda: calls.append("removed"))
    removed()
    hangup.fire()
    hangup.fire()
    hangup.subscribe(lambda: calls.append("late"))
    unsubscribe()
    assert calls == ["early", "late"] and hangup.gone


class ReceiveDouble:
    """An ASGI ``receive`` test double: the body, then ``http.disconnect`` when the test says so."""

    def __init__(self) -> None:
        self.gone = asyncio.Event()
        self.sent_body = False

    async def __call__(self) -> dict[str, Any]:
        if not self.sent_body:
            self.sent_body = True
            return {"type": "http.request", "body": b"{}", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}


async def watched(respond: bool) -> tuple[HangUp, list[str]]:
    """An app behind the watcher reads the body, answers (or not), then waits for the disconnect the
    way Starlette's StreamingResponse does; the client leaves meanwhile. Returns the request's signal
    and what the app's own ``receive`` got."""
    client = ReceiveDouble()
    scope: dict[str, Any] = {"type": "http", "path": "/invocations", "method": "POST"}
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        if respond:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"done", "more_body": False})
        client.gone.set()  # the client leaves
        seen.append((await receive())["type"])

    async def send(message: Any) -> None:
        pass

    await HangUpWatcher(app)(scope, client, send)
    hangup = hangup_of(scope)
    assert hangup is not None
    return hangup, seen


async def test_the_watcher_fires_on_a_disconnect_mid_response_and_passes_it_on() -> None:
    hangup, seen = await watched(respond=False)
    assert hangup.gone and seen == ["http.disconnect"]


async def test_a_disconnect_after_the_response_is_complete_is_no_hang_up() -> None:
    hangup, seen = await watched(respond=True)
    assert not hangup.gone and seen == ["http.disconnect"]
