"""``TurnSocket``'s framing when a cancel lands while the client is not reading (a WebSocket test double).

The race needs a full outbox and a cancel at the moment the turn waits to hand over a frame; over real
sockets that moment depends on timing (the real-server cancel tests in test_ws_turns.py meet it only
sometimes), here it is made every time: the double stops taking frames, the turn fills the outbox, and
the cancel arrives while the turn waits to hand over its next event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import pytest

from agentcore_app import event_frames
from agentcore_app.payload import Turn
from agentcore_app.ws_turns import OUTBOX_EVENTS, TurnSocket
from strands_kokoro import events

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class StalledClientSocketDouble:
    """A Starlette ``WebSocket`` test double: messages from ``incoming``; frames sent are kept, and
    sending waits while ``reading`` is clear (a client that stopped reading)."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[str | bytes] = []
        self.reading = asyncio.Event()
        self.cancel_answered = asyncio.Event()

    async def accept(self) -> None:
        return None

    async def receive(self) -> dict[str, Any]:
        return await self.incoming.get()

    async def send_text(self, text: str) -> None:
        await self.reading.wait()
        self.sent.append(text)
        if '"type":"cancelled"' in text:
            self.cancel_answered.set()

    async def send_bytes(self, data: bytes) -> None:
        await self.reading.wait()
        self.sent.append(data)

    def say(self, text: str) -> None:
        self.incoming.put_nowait({"type": "websocket.receive", "text": text})


async def endless_audio(turn: Turn, session_id: str | None) -> AsyncGenerator[Mapping[str, Any]]:
    """A turn that speaks until it is cancelled: one 10 ms PCM chunk after another."""
    seq = 0
    while True:
        yield events.audio_chunk(seq, 0, b"\x00\x01" * 240, 24_000)
        seq += 1
        await asyncio.sleep(0)


async def test_a_cancel_while_the_outbox_is_full_keeps_every_header_with_its_audio() -> None:
    socket = StalledClientSocketDouble()
    turns = TurnSocket(socket, endless_audio, session_id=None, worker_loop=None)  # type: ignore[arg-type]
    serving = asyncio.create_task(turns.serve())
    socket.say(event_frames.turn_request({"prompt": "Speak."}, "t"))
    await asyncio.sleep(0.2)  # the outbox fills, the turn waits to hand over its next event
    socket.say(event_frames.CANCEL)
    await asyncio.sleep(0.1)
    socket.reading.set()  # the client reads again
    async with asyncio.timeout(10):
        await socket.cancel_answered.wait()
    socket.incoming.put_nowait({"type": "websocket.disconnect"})
    async with asyncio.timeout(10):
        await serving
    reader = event_frames.FrameReader()
    read = [r for frame in socket.sent if (r := reader.feed(frame)) is not None]  # raises on a split pair
    kinds = [r.event["type"] for r in read]
    assert kinds.count("audio_chunk") >= OUTBOX_EVENTS  # the outbox was full when the cancel came
    assert kinds[-2:] == ["turn_end", "cancelled"] and read[-2].event["status"] == "cancelled"
    assert all(r.audio is not None and len(r.audio) == 480 for r in read if r.event["type"] == "audio_chunk")
