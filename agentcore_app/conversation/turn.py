"""A turn of a remembered conversation: restore, speak, store, in that order, whatever happens.

1. the conversation's lock is taken (one turn per conversation: a barge-in's new question waits until
   the interrupted turn has been stored);
2. the agent is built in a worker thread (Strands restores the history there);
3. the turn is spoken: a typed prompt by :func:`remembered_turn` (every ``text_delta`` handed to the
   client is "written"), an answer of a spoken conversation by the cascade (:class:`StoredMemory`);
4. the turn is stored, also after a barge-in or a model failure: Strands' record if the agent finished,
   else the prompt and the text written (:mod:`agentcore_app.conversation.history`); for a spoken answer,
   what the cascade kept (the answer as heard).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from typing import TYPE_CHECKING

from agentcore_app.conversation.store import AGENT_ID, ConversationStore, TurnBuffer
from agentcore_app.errors import AppErrorCode, TurnRefused

if TYPE_CHECKING:
    from strands import Agent
    from strands.agent.conversation_manager import ConversationManager
    from strands.models import Model
    from strands.types.content import Messages

    from strands_kokoro.events import Event
    from strands_kokoro.listening.memory import KeptHistory
    from strands_kokoro.speech import KokoroSpeech

logger = logging.getLogger(__name__)

AgentFactory = Callable[["TurnBuffer | None", "ConversationManager | None"], "Agent"]
"""Builds the turn's agent with a session manager and a conversation manager (both None: single turn)."""


async def remembered_turn(
    store: ConversationStore, session_id: str, speech: KokoroSpeech, new_agent: AgentFactory, prompt: str
) -> AsyncGenerator[Event, None]:
    """Speak one turn of conversation ``session_id``; yields architecture §4 events.

    Raises :class:`TurnRefused` before the first event when the conversation cannot be used.
    """
    async with store.turn(session_id) as conversation:
        agent = await _restored(store, session_id, conversation, new_agent)
        conversation.open_turn()
        written: list[str] = []
        finished = False
        try:
            async with aclosing(speech.stream(agent, prompt)) as spoken:
                async for event in spoken:
                    if event["type"] == "text_delta":
                        written.append(event["text"])
                    yield event
            finished = spoken.result is not None
        finally:
            await store.write_through(
                functools.partial(
                    conversation.close_turn,
                    agent,
                    finished=finished,
                    written="".join(written),
                    now=store.clock(),
                )
            )


class StoredMemory:
    """A spoken conversation's memory (the cascade's ``ConversationMemory``) in the store: each answer
    holds conversation ``session_id`` (its lock) while it runs, starts from its stored history and stores
    what the cascade kept. Raises :class:`TurnRefused` on entry when the conversation cannot be used.
    ``model`` is the cascade's text model: the agent that restores the history holds it and never runs."""

    def __init__(self, store: ConversationStore, session_id: str, model: Model) -> None:
        self.store = store
        self.session_id = session_id
        self.model = model

    @asynccontextmanager
    async def answering(self) -> AsyncIterator[KeptHistory]:
        from strands_kokoro.listening.memory import KeptHistory

        async with self.store.turn(self.session_id) as conversation:
            new_agent = functools.partial(_history_agent, self.model)
            agent = await _restored(self.store, self.session_id, conversation, new_agent)
            before = list(agent.messages)
            kept = KeptHistory(list(before))
            try:
                yield kept
            finally:
                now = self.store.clock()
                await self.store.write_through(
                    functools.partial(keep_history, conversation, agent, before, kept.messages, now=now)
                )


def _history_agent(
    model: Model, session_manager: TurnBuffer | None, conversation_manager: ConversationManager | None
) -> Agent:
    """An agent that only carries a conversation's history: Strands restores it and stores its turns."""
    from strands import Agent

    return Agent(
        model=model,
        agent_id=AGENT_ID,
        session_manager=session_manager,
        conversation_manager=conversation_manager,
        callback_handler=None,
    )


def keep_history(
    conversation: TurnBuffer, agent: Agent, before: Messages, after: Messages, *, now: float
) -> None:
    """Store what an answer changed in ``before``: the messages ``after`` adds, as one turn; when the
    answer went on with the last message (a resumed answer joins the part heard), that message is
    rewritten first. Any other change is not stored (logged): a stored turn is never rewritten."""
    same = 0
    while same < min(len(before), len(after)) and before[same] == after[same]:
        same += 1
    if same < len(before) - 1 or (same == len(before) - 1 and len(after) < len(before)):
        logger.warning("a spoken answer rewrote the stored history; not stored")
        return
    if same == len(before) - 1:
        agent.messages[-1] = after[same]
        conversation.redact_latest_message(after[same], agent)  # Strands' rewrite of the latest message
        same += 1
    conversation.open_turn()
    for message in after[same:]:
        agent.messages.append(message)
        conversation.append_message(message, agent)
    conversation.close_turn(agent, finished=True, written="", now=now)


async def _restored(
    store: ConversationStore, session_id: str, conversation: TurnBuffer, new_agent: AgentFactory
) -> Agent:
    """The turn's agent, its history restored (in a worker thread), or ``conversation_unavailable``."""
    try:
        return await asyncio.to_thread(new_agent, conversation, store.conversation_manager())
    except Exception:
        logger.exception("conversation %s could not be restored", session_id)
        raise TurnRefused(
            AppErrorCode.CONVERSATION_UNAVAILABLE, "the conversation could not be restored"
        ) from None
