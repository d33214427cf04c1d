"""``ScriptedModel``: the one test double of a Strands model, streaming known words at a set token rate.

It is a real ``strands.models.Model`` subclass, so the real ``Agent`` event loop, middleware chain, hooks
and tool executor all run; only the words are known in advance. The speech tests, the agent app tests,
the browser tests and the bidi-vs-batch benchmark all use it, so they speak the same answer.

- One :class:`ScriptedCall` per model call (text, then optionally a tool call, or a failure); a plain
  string is one call that just answers.
- ``hold_before_last``: before the last token of the last call the model waits for this event (at most
  ``hold_timeout_s``), so a test can say "audio arrived before the model finished" without racing a
  clock on a slow machine. A ``threading.Event`` works across event loops (the AgentCore SDK runs each
  turn on its own worker loop thread); an ``asyncio.Event`` works on the caller's loop.
- It records how far it got (``tokens_sent``, ``finished_at``) and whether the turn stopped it early
  (``stopped_early``: a client disconnect really cancelled the turn); given ``histories``, it appends the
  history each call read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from strands.models import Model

# The 4-sentence answer the tests and the bidi-vs-batch benchmark speak (about 270 characters).
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


class ScriptedModel(Model):
    """Streams scripted answers at ``tokens_per_s``; one :class:`ScriptedCall` per model call."""

    def __init__(
        self,
        answer: str | Sequence[ScriptedCall] = FOUR_SENTENCES,
        *,
        tokens_per_s: float = 40.0,
        hold_before_last: threading.Event | asyncio.Event | None = None,
        hold_timeout_s: float = 120.0,
        histories: list[Any] | None = None,
    ) -> None:
        self.calls = [ScriptedCall(answer)] if isinstance(answer, str) else list(answer)
        self.tokens_per_s = tokens_per_s
        self.hold_before_last = hold_before_last
        self.hold_timeout_s = hold_timeout_s
        self.call_index = 0
        self.tokens_sent = 0
        self.started_at: float | None = None
        self.finished_at: float | None = None  # time.perf_counter() when the last token went out
        self.stopped_early = False
        self.histories = histories  # each call's ``messages`` appended (a list shared by many models)

    @property
    def tokens(self) -> list[str]:
        """Every token the script holds, over all calls."""
        return [piece for call in self.calls for piece in tokens(call.text)]

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {"model_id": "scripted"}

    def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        raise NotImplementedError("the scripted model has no structured output")

    async def _hold(self) -> None:
        held = self.hold_before_last
        if isinstance(held, asyncio.Event):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(held.wait(), self.hold_timeout_s)
        elif held is not None:
            await asyncio.to_thread(held.wait, self.hold_timeout_s)

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterable[Any]:  # type: ignore[override]
        if self.histories is not None:
            self.histories.append(list(messages))
        call = self.calls[min(self.call_index, len(self.calls) - 1)]
        last_call = self.call_index >= len(self.calls) - 1
        self.call_index += 1
        if self.started_at is None:
            self.started_at = time.perf_counter()
        if call.fail_after_text:
            for piece in tokens(call.text):
                yield {"contentBlockDelta": {"delta": {"text": piece}}}
            raise RuntimeError("scripted model failure with a secret inside")
        done = False
        try:
            yield {"messageStart": {"role": "assistant"}}
            yield {"contentBlockStart": {"start": {}}}
            pieces = tokens(call.text)
            for i, piece in enumerate(pieces):
                await asyncio.sleep(1.0 / self.tokens_per_s)
                if last_call and i == len(pieces) - 1:
                    await self._hold()
                self.tokens_sent += 1
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
            done = True
        finally:
            if not done:
                self.stopped_early = True
