"""Test doubles for the speech tests: a scripted streaming Strands model (the TTS side is always real).

``ScriptedStreamingModel`` is a real ``strands.models.Model`` subclass, so the real ``Agent`` event loop,
middleware chain, hooks and tool executor all run; only the words are known in advance and arrive at a
set token rate, which is what lets the tests state when the model finished writing.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from strands import Agent
from strands.models import Model

from strands_kokoro import KokoroSpeech
from strands_kokoro.events import Event

# The 4-sentence answer every speech test and the bidi-vs-batch benchmark speak (about 270 characters).
FOUR_SENTENCES = (
    "Sea otters hold hands while they sleep, so they do not drift apart. "
    "They wrap themselves in kelp to stay anchored in the current. "
    "A dense coat of fur keeps them warm in cold water. "
    "Each otter carries a favourite rock to crack open shellfish."
)

_TOKEN = re.compile(r"\S+\s*")


def tokens(text: str) -> list[str]:
    """Word-sized tokens with their trailing space (close enough to an LLM's for timing)."""
    return _TOKEN.findall(text)


@dataclass
class ToolCall:
    """A model call that ends by asking for a tool (after streaming ``text`` first)."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass
class ScriptedCall:
    """What one model call writes: text, then optionally a tool call."""

    text: str
    tool: ToolCall | None = None
    fail_after_text: bool = False  # raise after streaming the text (the turn fails)


class ScriptedStreamingModel(Model):
    """Streams scripted answers at ``tokens_per_s``; one :class:`ScriptedCall` per model call.

    ``hold_before_last`` (optional): before the last token of the last call the model waits for this
    event (at most ``hold_timeout_s``), so a test can say "audio arrived before the model finished"
    without racing a clock. ``finished_at`` is ``time.perf_counter()`` when the last token went out.
    """

    def __init__(
        self,
        calls: list[ScriptedCall],
        *,
        tokens_per_s: float = 40.0,
        hold_before_last: asyncio.Event | None = None,
        hold_timeout_s: float = 120.0,
    ) -> None:
        self.calls = calls
        self.tokens_per_s = tokens_per_s
        self.hold_before_last = hold_before_last
        self.hold_timeout_s = hold_timeout_s
        self.call_index = 0
        self.finished_at: float | None = None
        self.started_at: float | None = None

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {"model_id": "scripted-streaming"}

    def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterable[Any]:  # type: ignore[override]
        call = self.calls[min(self.call_index, len(self.calls) - 1)]
        last_call = self.call_index >= len(self.calls) - 1
        self.call_index += 1
        if self.started_at is None:
            self.started_at = time.perf_counter()
        if call.fail_after_text:
            for piece in tokens(call.text):
                yield {"contentBlockDelta": {"delta": {"text": piece}}}
            raise RuntimeError("scripted model failure with a secret inside")
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        pieces = tokens(call.text)
        for i, piece in enumerate(pieces):
            await asyncio.sleep(1.0 / self.tokens_per_s)
            if last_call and i == len(pieces) - 1 and self.hold_before_last is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.hold_before_last.wait(), self.hold_timeout_s)
            yield {"contentBlockDelta": {"delta": {"text": piece}}}
        yield {"contentBlockStop": {}}
        if call.tool is not None:
            tool_use_id = f"tool-{self.call_index}"
            yield {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": tool_use_id, "name": call.tool.name}}
                }
            }
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(call.tool.input)}}}}
            yield {"contentBlockStop": {}}
            stop = "tool_use"
        else:
            stop = "end_turn"
            if last_call:
                self.finished_at = time.perf_counter()
        yield {"messageStop": {"stopReason": stop}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 1, "outputTokens": len(pieces), "totalTokens": 1 + len(pieces)},
                "metrics": {"latencyMs": 0},
            }
        }


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
    """Tasks a turn may never leave behind (the test's own proxy tasks are not the turn's)."""
    return "CuttingProxy" not in getattr(task.get_coro(), "__qualname__", "")


async def run_turn(stream: AsyncIterator[Event], on_event: Callable[[Event], None] | None = None) -> Turn:
    before = asyncio.all_tasks()
    turn = Turn()
    async with asyncio.timeout(240):
        async for event in stream:
            json.dumps(event)  # DESIGN §4: every event is JSON-serialisable
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
) -> tuple[Agent, ScriptedStreamingModel]:
    model = ScriptedStreamingModel(calls, **model_options)
    return Agent(model=model, hooks=[speech], tools=tools or [], callback_handler=None), model


def words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())
