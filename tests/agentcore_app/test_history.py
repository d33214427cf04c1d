"""The history rules on their own: whole turns trimmed, unfinished turns collapsed, validity kept."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore_app.conversation.history import (
    TurnWindowConversationManager,
    collapse_turn,
    is_valid_history,
    turn_starts,
    turns_to_trim,
)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"text": text}]}


def tool_use(text: str, tool_id: str) -> dict[str, Any]:
    use = {"toolUseId": tool_id, "name": "calculator", "input": {"expression": "1+1"}}
    return {"role": "assistant", "content": [{"text": text}, {"toolUse": use}]}


def tool_result(tool_id: str) -> dict[str, Any]:
    result = {"toolUseId": tool_id, "status": "success", "content": [{"text": "2"}]}
    return {"role": "user", "content": [{"toolResult": result}]}


def tool_turn(n: int) -> list[dict[str, Any]]:
    """A turn with two tool calls: 6 messages, three of them user messages."""
    return [
        user(f"q{n}"),
        tool_use("Let me add.", f"t{n}a"),
        tool_result(f"t{n}a"),
        tool_use("Once more.", f"t{n}b"),
        tool_result(f"t{n}b"),
        assistant(f"a{n}"),
    ]


def plain_turn(n: int) -> list[dict[str, Any]]:
    return [user(f"q{n}"), assistant(f"a{n}")]


def history(*turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [message for turn in turns for message in turn]


def test_turn_starts_skip_tool_result_messages() -> None:
    messages = history(plain_turn(1), tool_turn(2), plain_turn(3))
    assert turn_starts(messages) == [0, 2, 8]


@pytest.mark.parametrize("max_turns", [1, 2, 3, 4])
def test_trimming_keeps_whole_turns_and_a_valid_history(max_turns: int) -> None:
    messages = history(tool_turn(1), plain_turn(2), tool_turn(3), plain_turn(4))
    assert is_valid_history(messages)
    cut = turns_to_trim(messages, max_turns)
    kept = messages[cut:]
    assert len(turn_starts(kept)) == min(max_turns, 4)
    assert is_valid_history(kept)
    assert kept[-2:] == plain_turn(4)  # the newest turn always stays


def test_trimming_drops_a_damaged_front_up_to_the_first_prompt() -> None:
    """A history that begins mid-turn (an orphan tool result, a reply) starts at the next prompt."""
    messages = [tool_result("x"), assistant("late"), *plain_turn(1)]
    assert not is_valid_history(messages)
    assert turns_to_trim(messages, 5) == 2


def test_the_window_manager_counts_what_it_removed() -> None:
    class FakeAgent:
        messages = history(plain_turn(1), tool_turn(2), plain_turn(3))

    manager = TurnWindowConversationManager(max_turns=1)
    manager.apply_management(FakeAgent())
    assert FakeAgent.messages == plain_turn(3)
    assert manager.removed_message_count == 8
    manager.apply_management(FakeAgent())
    assert manager.removed_message_count == 8  # idempotent
    assert manager.get_state()["__name__"] == "TurnWindowConversationManager"
    with pytest.raises(ValueError):
        TurnWindowConversationManager(max_turns=0)


def test_an_unfinished_turn_collapses_to_its_prompt_and_the_text_written() -> None:
    # Cut inside the second tool call: a toolUse without its result is in the history.
    messages = [
        *plain_turn(1),
        user("q2"),
        tool_use("Let me add.", "t"),
        tool_result("t"),
        tool_use("More.", "u"),
    ]
    assert not is_valid_history(messages)
    collapse_turn(messages, 2, "Let me add. More. The sum is")
    assert messages == [*plain_turn(1), user("q2"), assistant("Let me add. More. The sum is")]
    assert is_valid_history(messages)


def test_an_unfinished_turn_with_nothing_written_leaves_no_trace() -> None:
    messages = [*plain_turn(1), user("q2")]  # cancelled before the model wrote a word
    collapse_turn(messages, 2, "  ")
    assert messages == plain_turn(1)
    with pytest.raises(ValueError):
        collapse_turn(plain_turn(1), 1, "x")


@pytest.mark.parametrize(
    "messages",
    [
        [user("q")],  # a dangling prompt
        [*plain_turn(1), user("q2"), user("q3"), assistant("a")],  # two prompts in a row
        [user("q"), tool_use("x", "t"), assistant("a")],  # a tool call without its result
        [user("q"), tool_use("x", "t"), tool_result("other"), assistant("a")],  # a stale result
        [assistant("a"), *plain_turn(1)],  # starts with the assistant
    ],
)
def test_invalid_histories_are_recognised(messages: list[dict[str, Any]]) -> None:
    assert not is_valid_history(messages)


def test_the_embedded_model_is_given_the_whole_history_as_plain_turns() -> None:
    """SmolLM2 takes plain strings: a kept history (a tool turn, a collapsed turn) flattens to alternating
    user/assistant messages after the system prompt."""
    from agentcore_app.agent.local_llm import chat_messages

    messages = [*tool_turn(1), user("q2"), assistant("Cut short"), user("q3")]
    flattened = chat_messages(messages, "Be brief.")
    assert flattened[0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in flattened[1:]] == ["user", "assistant"] * 4 + ["user"]
    assert [m["content"] for m in flattened[1:]] == [
        "q1",
        "Let me add.",
        "2",  # the tool result, as text
        "Once more.",
        "2",
        "a1",
        "q2",
        "Cut short",
        "q3",
    ]
