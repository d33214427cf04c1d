"""One spoken turn of a remembered conversation: restore, speak, store, in that order, whatever happens.

1. the conversation's lock is taken (one turn per conversation: a barge-in's new question waits until
   the interrupted turn has been stored);
2. the agent is built in a worker thread (Strands restores the history there);
3. the turn is spoken; every ``text_delta`` handed to the client is remembered as "written";
4. the turn is stored, also after a barge-in or a model failure: Strands' record if the agent finished,
   else the prompt and the text written (:mod:`agentcore_app.conversation.history`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from agentcore_app.conversation.store import ConversationStore, TurnBuffer
from agentcore_app.errors import AppErrorCode, TurnRefused
from kokoro_serving.uninterruptible import run_to_end

if TYPE_CHECKING:
    from strands import Agent
    from strands.agent.conversation_manager import ConversationManager

    from strands_kokoro.events import Event
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
        try:
            agent = await asyncio.to_thread(new_agent, conversation, store.conversation_manager())
        except Exception:
            logger.exception("conversation %s could not be restored", session_id)
            raise TurnRefused(
                AppErrorCode.CONVERSATION_UNAVAILABLE, "the conversation could not be restored"
            ) from None
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
            await _uncancellable(
                asyncio.to_thread(
                    conversation.close_turn,
                    agent,
                    finished=finished,
                    written="".join(written),
                    now=store.clock(),
                )
            )


async def _uncancellable(work: Awaitable[Any]) -> None:
    """Run ``work`` to its end even if this task is cancelled meanwhile (then re-raise the cancel).

    Why: the turn is stored while the SDK tears the request down after a disconnect. If a cancellation
    (the first, or any later one) cut the wait short, the lock would be released before the turn is
    written and the next turn could restore a history without it.
    """
    try:
        await run_to_end(work)
    except Exception:
        logger.exception("a conversation turn could not be stored")
