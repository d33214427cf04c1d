"""A spoken conversation's memory in the app's store (``StoredMemory``): each answer starts from the
stored history and stores what the cascade kept, on a real file store with Strands' own session manager
restoring a real ``Agent`` (whose model, ``ScriptedModel``, never runs here)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.conversation.store import ConversationStore
from agentcore_app.conversation.turn import StoredMemory
from agentcore_app.errors import TurnRefused
from tests.scripted_model import ScriptedModel


def said(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"text": text}]}


def plain(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m["role"], " ".join(b.get("text", "") for b in m["content"])) for m in messages]


def test_answers_start_from_the_stored_history_and_store_what_was_heard(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = ConversationStore(ConversationSettings(tmp_path))
    memory = StoredMemory(store, f"spoken-{uuid.uuid4()}", ScriptedModel())

    async def scenario() -> list[list[tuple[str, str]]]:
        seen = []
        async with memory.answering() as kept:  # a new conversation
            seen.append(plain(kept.messages))
            kept.messages = [*kept.messages, said("user", "Hello?"), said("assistant", "Hi. I am")]
        async with memory.answering() as kept:  # a falsely interrupted answer goes on with the last one
            seen.append(plain(kept.messages))
            kept.messages = [*kept.messages[:-1], said("assistant", "Hi. I am here.")]
        async with memory.answering() as kept:
            seen.append(plain(kept.messages))
            kept.messages = [*kept.messages, said("user", "Bye."), said("assistant", "Bye!")]
        async with memory.answering() as kept:  # a stored turn is never rewritten
            seen.append(plain(kept.messages))
            kept.messages = [said("user", "Something else."), *kept.messages[1:]]
        async with memory.answering() as kept:
            seen.append(plain(kept.messages))
        return seen

    with caplog.at_level(logging.WARNING):
        seen = asyncio.run(scenario())
    first_turn = [("user", "Hello?"), ("assistant", "Hi. I am here.")]
    assert seen[0] == []
    assert seen[1] == [("user", "Hello?"), ("assistant", "Hi. I am")]
    assert seen[2] == first_turn
    assert seen[3] == seen[4] == [*first_turn, ("user", "Bye."), ("assistant", "Bye!")]
    assert "rewrote the stored history" in caplog.text


def test_an_unreachable_store_refuses_the_answer_coded(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    store = ConversationStore(ConversationSettings(blocked / "conversations"))
    memory = StoredMemory(store, f"spoken-{uuid.uuid4()}", ScriptedModel())

    async def scenario() -> str:
        with pytest.raises(TurnRefused) as refused:
            async with memory.answering():
                pass
        return refused.value.code

    assert asyncio.run(scenario()) == "conversation_unavailable"
