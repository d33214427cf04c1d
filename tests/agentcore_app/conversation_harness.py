"""What the conversation tests share: the real agent app on a free port, its store, and the turns asked."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from agentcore_app.app import create_app
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.conversation.store import AGENT_ID, ConversationStore
from agentcore_app.local.client import run_turn
from agentcore_app.local.stack import free_port, serve_asgi
from agentcore_app.local.turn_record import TurnRecord
from tests.agentcore_app.history_model import texts, user_prompts
from tests.scripted_model import ScriptedModel

if TYPE_CHECKING:
    from strands.models.model import Model


# The first test to ask for the session's model server pays its start (minutes on a busy 2-core machine).
MODEL_SERVER_TIMEOUT = pytest.mark.timeout(600)

FIRST = "My favourite animal is the sea otter."
SECOND = "Which animal did I say?"
ANSWER_1 = "Sea otters hold hands while they sleep."


def new_session_id() -> str:
    return f"test-{uuid.uuid4()}"


def dead_endpoint() -> str:
    return f"ws://127.0.0.1:{free_port()}"


def store_at(state_dir: Path, clock: Callable[[], float] = time.time, **bounds: Any) -> ConversationStore:
    return ConversationStore(ConversationSettings(location=state_dir, **bounds), clock=clock)


@asynccontextmanager
async def serving(
    speech_endpoint: str, model: Model, store: ConversationStore, tools: Sequence[Any] = ()
) -> AsyncIterator[str]:
    """The real agent app (this model for every turn, this store) on a free port; yields its URL."""
    app = create_app(
        speech_endpoint=speech_endpoint,
        model=lambda: model,
        conversations=store,
        tools=tools,
        speech_options={"reconnect_attempts": 0},
    )
    app.logger.setLevel(logging.WARNING)
    async with serve_asgi(app) as url:
        yield url


async def ask(url: str, prompts: Sequence[str], session_id: str | None) -> list[TurnRecord]:
    """Each prompt as one turn, in order, over real HTTP with the session header."""
    async with httpx.AsyncClient(timeout=300) as http:
        return [await run_turn(url, p, "bidi", http_client=http, session_id=session_id) for p in prompts]


def stored_history(store: ConversationStore, session_id: str) -> list[Any]:
    """What the next turn of ``session_id`` will be given: the history restored from the store."""
    from strands import Agent

    agent = Agent(
        model=ScriptedModel(),
        agent_id=AGENT_ID,
        session_manager=store.open(session_id),
        conversation_manager=store.conversation_manager(),
        callback_handler=None,
    )
    return list(agent.messages)


def kinds(record: TurnRecord) -> list[str]:
    return [e.event["type"] for e in record.events]


def recall(messages: list[Any]) -> str:
    """Answer the first question; answer the second from the first (and check the history is exact)."""
    if len(user_prompts(messages)) == 1:
        return ANSWER_1
    assert texts(messages) == [("user", FIRST), ("assistant", ANSWER_1), ("user", SECOND)], texts(messages)
    return f"You said this: {user_prompts(messages)[0]}"
