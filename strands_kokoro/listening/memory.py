"""Where a spoken conversation is kept between answers (:class:`ConversationMemory`).

The cascade holds its memory for each answer: :meth:`ConversationMemory.answering` yields the
conversation as kept at that moment (turns typed elsewhere may have joined it since the last answer) and,
once the answer has ended (whole, cut by the user, or failed), keeps what the cascade set on it: the same
history with the user's words and the answer as heard. No other turn joins the conversation meanwhile.
:class:`ConversationInMemory` (the default) keeps it in the process; the agent app keeps it in its
conversation store, so a spoken conversation is the same conversation as its session's typed turns.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from strands.types.content import Messages

__all__ = ["ConversationInMemory", "ConversationMemory", "KeptHistory"]


@dataclass(slots=True)
class KeptHistory:
    """The conversation as kept when an answer starts; the cascade sets ``messages`` to the conversation
    with that answer (unchanged when the listener heard nothing of it)."""

    messages: Messages


class ConversationMemory(Protocol):
    """A spoken conversation's keeper (see the module)."""

    def answering(self) -> AbstractAsyncContextManager[KeptHistory]:
        """Held for one answer: the history as kept now; on exit, ``messages`` as set is kept.

        Raising on entry means the memory cannot be used for this answer (the cascade answers from the
        history it last saw, says ``memory_unavailable`` and keeps nothing of that answer).
        """
        ...


class ConversationInMemory:
    """The default memory: the conversation in this process, one answer at a time."""

    def __init__(self, messages: Messages | None = None) -> None:
        self.messages: Messages = list(messages or [])

    @contextlib.asynccontextmanager
    async def answering(self) -> AsyncIterator[KeptHistory]:
        kept = KeptHistory(list(self.messages))
        try:
            yield kept
        finally:
            self.messages = kept.messages
