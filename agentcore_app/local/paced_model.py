"""A Strands model whose streamed text is released no faster than a given rate (tokens per second).

``PacedModel`` wraps any model and releases its k-th text delta no sooner than ``k / tokens_per_s``
seconds after the first, which goes out the moment the inner model wrote it (a hosted model's time to
first token is its own). One delta is one token for the embedded model, which streams token by token; a
hosted model's deltas may hold several, so there the pace is a ceiling on deltas, not on tokens. The other
stream events, the configuration and structured output pass through unchanged. The offline demo
(``--llm-pace``) answers with it at a hosted model's pace.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncGenerator
from typing import Any, TypeVar

from pydantic import BaseModel
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

T = TypeVar("T", bound=BaseModel)

HOSTED_PACE_TOKENS_PER_S = 50.0
"""A typical hosted model's streaming rate (they stream about 50-100 tokens per second)."""


class PaceError(ValueError):
    """A pace that is not a positive, finite number of tokens per second."""


def checked_pace(tokens_per_s: float) -> float:
    """``tokens_per_s`` if it is a usable pace, else :class:`PaceError` naming it."""
    if not math.isfinite(tokens_per_s) or tokens_per_s <= 0:
        raise PaceError(f"--llm-pace {tokens_per_s!r}: give a positive number of tokens per second, e.g. 50")
    return tokens_per_s


class PacedModel(Model):
    """``inner``'s stream, its text deltas released no faster than ``tokens_per_s``."""

    def __init__(self, inner: Model, tokens_per_s: float) -> None:
        self.inner = inner
        self.tokens_per_s = checked_pace(tokens_per_s)

    def update_config(self, **model_config: Any) -> None:
        self.inner.update_config(**model_config)

    def get_config(self) -> Any:
        return self.inner.get_config()

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        first_at: float | None = None
        released = 0
        inner = self.inner.stream(messages, tool_specs, system_prompt, **kwargs)
        try:
            async for event in inner:
                if "contentBlockDelta" in event and "text" in event["contentBlockDelta"].get("delta", {}):
                    now = time.perf_counter()
                    if first_at is None:
                        first_at = now
                    due = first_at + released / self.tokens_per_s
                    if due > now:
                        await asyncio.sleep(due - now)
                    released += 1
                yield event
        finally:
            close = getattr(inner, "aclose", None)  # the consumer left: the inner model stops sampling
            if close is not None:
                await close()

    async def structured_output(
        self, output_model: type[T], prompt: Messages, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        async for event in self.inner.structured_output(output_model, prompt, system_prompt, **kwargs):
            yield event
