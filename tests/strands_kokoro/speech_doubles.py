"""Helpers for the speech tests: run a turn and check its invariants, build an agent on the scripted model.

The model is :class:`tests.scripted_model.ScriptedModel` (shared with the agent app tests and the
benchmarks); the TTS side is always real.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from strands import Agent

from strands_kokoro import KokoroSpeech
from strands_kokoro.events import Event
from strands_kokoro.protocol import AudioData
from strands_kokoro.sessions.base import SessionClosedError, SessionEvent, SpeechSession
from strands_kokoro.sessions.ws import WebSocketSession
from tests.scripted_model import ScriptedCall, ScriptedModel

# ------------------------------------------------------------------------------ dropped connections


@dataclass
class Drop:
    """Abort the connection once ``after_bytes`` of request ``request``'s audio went to the listener on it
    (the frame that crosses the count is cut there: the listener gets only its first part)."""

    request: int
    after_bytes: int
    happened: bool = False


@dataclass
class DroppingSessions:
    """A session factory: the n-th session made follows ``plan[n]`` (no drop past the plan's end)."""

    endpoint: str
    plan: list[Drop]
    then_endpoint: str | None = None  # where sessions past the plan go (default: ``endpoint``)
    opened: list[SpeechSession] = field(default_factory=list)

    def __call__(self) -> SpeechSession:
        n = len(self.opened)
        if n < len(self.plan):
            self.opened.append(DroppingWebSocketSession(self.endpoint, self.plan[n]))
        else:
            self.opened.append(WebSocketSession(self.then_endpoint or self.endpoint, open_timeout=5.0))
        return self.opened[-1]


class DroppingWebSocketSession(WebSocketSession):
    """The real WebSocket session, whose socket dies at the point its :class:`Drop` names: aborted (no
    close frame, what a dead network looks like), and the turn sees the drop there, not after frames
    that were already buffered."""

    def __init__(self, endpoint: str, drop: Drop | None) -> None:
        super().__init__(endpoint)
        self.drop = drop

    async def events(self) -> AsyncIterator[SessionEvent]:
        given = 0
        async for event in super().events():
            drop = self.drop
            if drop is None or drop.happened or not isinstance(event, AudioData):
                yield event
                continue
            if not event.request_id.endswith(f"-{drop.request}"):
                yield event
                continue
            room = drop.after_bytes - given
            if len(event.pcm) < room:
                given += len(event.pcm)
                yield event
                continue
            if room > 0:
                yield AudioData(event.request_id, event.pcm[:room])
            drop.happened = True
            assert self._ws is not None
            self._ws.transport.abort()
            raise SessionClosedError("the test cut the connection")


# ------------------------------------------------------------------------------ running a turn

AGENT_END_FIELDS = {
    "type",
    "request_id",
    "mode",
    "first_text_ms",
    "first_audio_ms",
    "total_ms",
    "audio_ms",
    "chunks",
    "requests",
    "rtf",
    "stall_ms",
}


@dataclass
class Turn:
    """Every event of one turn with its arrival time (``time.perf_counter()``)."""

    events: list[Event] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e["type"] == kind]

    def first(self, kind: str) -> int:
        return next(i for i, e in enumerate(self.events) if e["type"] == kind)

    def last(self, kind: str) -> int:
        return max(i for i, e in enumerate(self.events) if e["type"] == kind)

    def text(self) -> str:
        return "".join(e["text"] for e in self.of("text_delta"))

    def audio_by_sentence(self) -> dict[int, bytes]:
        audio: dict[int, bytes] = {}
        for e in self.of("audio_chunk"):
            audio[e["sentence"]] = audio.get(e["sentence"], b"") + base64.b64decode(e["audio"])
        return audio


def _ours(task: asyncio.Task[Any]) -> bool:
    """Tasks a turn may never leave behind (the test's own stand-ins' tasks are not the turn's: SageMaker's
    router stand-in hangs up on the model server after the turn's input stream ended)."""
    name = getattr(task.get_coro(), "__qualname__", "")
    return not name.startswith("SageMakerBidiRouter.")


async def run_turn(stream: AsyncIterator[Event], on_event: Callable[[Event], None] | None = None) -> Turn:
    before = asyncio.all_tasks()
    turn = Turn()
    async with asyncio.timeout(240):
        async for event in stream:
            json.dumps(event)  # architecture §4: every event is JSON-serialisable
            turn.events.append(event)
            turn.times.append(time.perf_counter())
            if on_event is not None:
                on_event(event)
    await asyncio.sleep(0)
    leftover = [t for t in asyncio.all_tasks() - before if not t.done() and _ours(t)]
    assert not leftover, f"tasks left after the turn: {leftover}"
    assert turn.events[0]["type"] == "agent_start" and turn.events[-1]["type"] == "agent_end"
    assert set(turn.events[-1]) == AGENT_END_FIELDS
    return turn


def make_agent(
    speech: KokoroSpeech, calls: list[ScriptedCall], tools: list[Any] | None = None, **model_options: Any
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(calls, **model_options)
    return Agent(model=model, hooks=[speech], tools=tools or [], callback_handler=None), model


def words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())
