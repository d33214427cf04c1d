"""``ScriptedModel``: a test double of a Strands model that streams a known answer at a set token rate.

Used where a test needs a deterministic answer (event order, client disconnect); the real embedded LLM has
its own end-to-end test. It records how far it got and whether it was stopped early, so a test can see
that a client disconnect really cancelled the turn.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any

from strands.models.model import Model
from strands.types.streaming import StreamEvent

FOUR_SENTENCES = (
    "Otters hold hands while they sleep. They do it so they do not drift apart. "
    "Some otters even keep a favourite stone. They use it to crack open shellfish."
)


class ScriptedModel(Model):
    """Streams ``answer`` word by word, ``token_delay_s`` apart."""

    def __init__(
        self,
        answer: str = FOUR_SENTENCES,
        token_delay_s: float = 0.02,
        *,
        hold_last_token_until: threading.Event | None = None,
        hold_timeout_s: float = 120.0,
    ) -> None:
        self.answer = answer
        self.token_delay_s = token_delay_s
        # Holding the last token until the test says so makes "audio arrived before the model finished"
        # a fact the test can check on any machine, however slow its synthesis is under load.
        self.hold_last_token_until = hold_last_token_until
        self.hold_timeout_s = hold_timeout_s
        self.tokens_sent = 0
        self.finished = False
        self.stopped_early = False

    @property
    def tokens(self) -> list[str]:
        return re.findall(r"\S+\s*", self.answer)

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterable[StreamEvent]:
        try:
            yield {"messageStart": {"role": "assistant"}}
            yield {"contentBlockStart": {"start": {}}}
            tokens = self.tokens
            for index, token in enumerate(tokens):
                await asyncio.sleep(self.token_delay_s)
                if index == len(tokens) - 1 and self.hold_last_token_until is not None:
                    await asyncio.to_thread(self.hold_last_token_until.wait, self.hold_timeout_s)
                self.tokens_sent += 1
                yield {"contentBlockDelta": {"delta": {"text": token}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            self.finished = True
        finally:
            if not self.finished:
                self.stopped_early = True

    async def structured_output(
        self, output_model: Any, prompt: Any, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield
