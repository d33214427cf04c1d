"""The rules a remembered conversation keeps, as pure functions over Strands messages.

Every rule keeps the history something any model provider accepts: it starts with a user message that
carries the user's words, each ``toolResult`` follows its ``toolUse``, roles alternate. Whole turns are
trimmed from the front; a turn that did not end normally is *collapsed* to its prompt and one assistant
message with the text written to the client, or dropped when nothing was written (architecture §10,
"Conversations").
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from strands.agent.conversation_manager import SlidingWindowConversationManager

if TYPE_CHECKING:
    from strands import Agent
    from strands.types.content import Message, Messages


def is_turn_start(message: Message) -> bool:
    """A user message with the user's own words (not a message of tool results)."""
    return message["role"] == "user" and not any("toolResult" in block for block in message["content"])


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Indices of the messages that start a turn, in order."""
    return [i for i, message in enumerate(messages) if is_turn_start(message)]


def turns_to_trim(messages: Sequence[Message], max_turns: int) -> int:
    """How many messages to drop from the front so at most ``max_turns`` whole turns remain.

    Anything before the first turn start (a history whose front was damaged or cut elsewhere) goes too,
    so the kept history always begins with a user's prompt.
    """
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    starts = turn_starts(messages)
    if not starts:
        return len(messages)
    if len(starts) > max_turns:
        return starts[-max_turns]
    return starts[0]


def collapse_turn(messages: Messages, start: int, written: str) -> None:
    """Replace the turn that begins at ``start`` (in place) by its prompt and the text written, or drop it.

    ``written`` is the text the client was sent during the turn (every model call's text, in order);
    the turn's tool calls and results are not kept: they may be incomplete, and the written text is what
    the listener was shown.
    """
    if not is_turn_start(messages[start]):
        raise ValueError(f"message {start} does not start a turn")
    del messages[start + 1 :]
    if written.strip():
        messages.append({"role": "assistant", "content": [{"text": written}]})
    else:
        del messages[start:]


def is_valid_history(messages: Sequence[Message]) -> bool:
    """True when the history is one a provider accepts: see the module docstring.

    Starts with a turn start, roles alternate, every ``toolUse`` is answered by exactly its results in the
    next message, every ``toolResult`` answers the ``toolUse`` just before it, and the last message is the
    assistant's (a stored history never ends on an unanswered prompt).
    """
    if not messages:
        return True
    if not is_turn_start(messages[0]) or messages[-1]["role"] != "assistant":
        return False
    for before, after in itertools.pairwise(messages):
        if before["role"] == after["role"]:
            return False
    for i, message in enumerate(messages):
        uses = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
        results = [b["toolResult"]["toolUseId"] for b in message["content"] if "toolResult" in b]
        if results:
            previous = messages[i - 1]["content"] if i else []
            asked = [b["toolUse"]["toolUseId"] for b in previous if "toolUse" in b]
            if sorted(results) != sorted(asked):
                return False
        if uses:
            if i + 1 >= len(messages):
                return False
            answered = [b["toolResult"]["toolUseId"] for b in messages[i + 1]["content"] if "toolResult" in b]
            if sorted(answered) != sorted(uses):
                return False
    return True


class TurnWindowConversationManager(SlidingWindowConversationManager):
    """Keep at most ``max_turns`` whole turns; trimming happens after every invocation.

    Why a subclass of Strands' sliding window: its overflow recovery (truncating large tool results, then
    trimming at a valid point) stays as it is; only the routine bound counts turns instead of messages, so
    one tool-heavy turn never pushes out half of another. ``removed_message_count`` is kept exactly as
    Strands' session managers expect (they skip that many stored messages when they restore).
    """

    def __init__(self, max_turns: int, **kwargs: Any) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        super().__init__(**kwargs)
        self.max_turns = max_turns

    def apply_management(self, agent: Agent, **kwargs: Any) -> None:
        """Drop the oldest turns beyond ``max_turns`` (and anything before the first turn start)."""
        cut = turns_to_trim(agent.messages, self.max_turns)
        if cut:
            del agent.messages[:cut]
            self.removed_message_count += cut
