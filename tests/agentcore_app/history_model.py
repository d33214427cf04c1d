"""``HistoryScriptedModel``: the scripted test double, answering from the history it is given.

A ``ScriptedModel`` (:mod:`tests.scripted_model`) whose script is chosen per model call by a function of
the messages the call received, so a test can make the second answer depend on the first (as a real model
would) and check, inside the model, that the history is exactly what it should be. A failed check raises
in the model, which fails the turn (an ``error`` event), so it cannot pass unnoticed. Every call's
messages and tool specs are kept in ``received`` / ``tool_names``.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterable, Callable, Sequence
from typing import Any

from tests.scripted_model import ScriptedCall, ScriptedModel

Script = str | ScriptedCall
"""One model call's script: its text, or text then a tool call (one call per ``stream``)."""


def texts(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """``(role, text)`` per message; tool blocks shown as ``<toolUse name>`` / ``<toolResult text>``.

    The app's time line (:mod:`agentcore_app.agent.time_context`, folded into the latest question for one
    call) is left out, so histories compare as the conversation was said; :func:`now_lines` finds it.
    """
    out = []
    for message in messages:
        parts = []
        for block in message["content"]:
            if "text" in block and block["text"].lstrip().startswith("<now>"):
                continue
            if "text" in block:
                parts.append(block["text"])
            elif "toolUse" in block:
                parts.append(f"<toolUse {block['toolUse']['name']}>")
            elif "toolResult" in block:
                shown = " ".join(item.get("text", "") for item in block["toolResult"]["content"])
                parts.append(f"<toolResult {shown}>")
        out.append((message["role"], "".join(parts)))
    return out


def now_lines(messages: Sequence[Any]) -> list[str]:
    """The injected time lines in ``messages`` (at most one: only the call's latest question gets it)."""
    return [
        block["text"].strip()
        for message in messages
        for block in message["content"]
        if "text" in block and block["text"].lstrip().startswith("<now>")
    ]


def user_prompts(messages: Sequence[Any]) -> list[str]:
    """The user's own words, turn by turn (tool results left out)."""
    return [text for role, text in texts(messages) if role == "user" and not text.startswith("<toolResult")]


class HistoryScriptedModel(ScriptedModel):
    """Test double: ``answer_for(messages)`` picks each call's script; what each call got is recorded."""

    def __init__(self, answer_for: Callable[[list[Any]], Script], **kwargs: Any) -> None:
        super().__init__("unused", **kwargs)
        self.answer_for = answer_for
        self.received: list[list[Any]] = []
        self.tool_names: list[list[str]] = []

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterable[Any]:  # type: ignore[override]
        self.received.append(copy.deepcopy(list(messages)))
        self.tool_names.append([spec["name"] for spec in tool_specs or []])
        script = self.answer_for(self.received[-1])
        self.calls = [ScriptedCall(script) if isinstance(script, str) else script]
        self.call_index = 0
        async for event in super().stream(messages, tool_specs, system_prompt, **kwargs):
            yield event
