"""The rules a remembered conversation keeps, as pure functions over Strands messages.

Why these rules (every one keeps the history something any model provider accepts):

- A *turn* starts at a user message that carries the user's words, not tool results. Bedrock's Converse
  API (and most providers) want the history to start with such a message, every ``toolResult`` right
  after the ``toolUse`` that asked for it, and roles alternating. Trimming whole turns from the front
  keeps all three: a cut can never fall between a tool call and its result.
- A turn that did not end normally (the listener barged in and the client went away, or the model
  failed) is *collapsed*: it is kept as the user's prompt plus ONE assistant message holding the text
  that was written to the client, or dropped entirely when nothing was written. Strands itself would
  leave the prompt with no answer (it appends an assistant message only once a model call ends), which
  makes the next prompt a second user message in a row; and a turn cut inside a tool call would leave
  a ``toolUse`` without its result. The collapsed turn says what the listener was shown, nothing more.
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
