"""Barge-in keeps a conversation valid, over real HTTP: the listener leaves mid-turn (while text is
written, during a tool, before any text) and the next turn is given the answer as far as it was written.

The LLM is a test double (``HistoryScriptedModel``, ``ScriptedModel``); the speech side is the real
Kokoro model server where the test is about what a listener hears, and a dead endpoint otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from httpx_sse import aconnect_sse

from agentcore_app.conversation.history import is_valid_history
from agentcore_app.runtime_session import SESSION_HEADER
from tests.agentcore_app import probe_tools
from tests.agentcore_app.conversation_harness import (
    FIRST,
    MODEL_SERVER_TIMEOUT,
    SECOND,
    ask,
    dead_endpoint,
    new_session_id,
    serving,
    store_at,
    stored_history,
)
from tests.agentcore_app.history_model import HistoryScriptedModel, texts, user_prompts
from tests.scripted_model import FOUR_SENTENCES, ScriptedCall, ToolCall

if TYPE_CHECKING:
    from tests.model_server_process import RunningServer


# ----------------------------------------------------------------------------------------- barge-in


async def _turn_cut_short(
    url: str,
    session_id: str,
    stop_after: Callable[[list[dict[str, Any]]], bool] | None = None,
    stop_when: threading.Event | None = None,
    after_leaving: Callable[[], None] = lambda: None,
    seen_by_then: str | None = None,
) -> str:
    """Start a turn and leave mid-turn (the listener barged in); return the text seen; wait for the turn end.

    The client leaves once ``stop_after(events so far)`` is true, or once ``stop_when`` is set (for a
    moment when no event arrives, such as a tool running) and, with ``seen_by_then``, that text has
    reached it (events emitted just before the moment may still be on their way; at most 10 s more);
    then ``after_leaving()`` runs.
    """
    seen: list[dict[str, Any]] = []
    arrived = asyncio.Event()  # ``seen_by_then`` has reached the client

    def text() -> str:
        return "".join(e["text"] for e in seen if e["type"] == "text_delta")

    async def read(http: httpx.AsyncClient) -> None:
        headers = {SESSION_HEADER: session_id}
        async with aconnect_sse(
            http, "POST", url + "/invocations", json={"prompt": FIRST}, headers=headers
        ) as src:
            async for sse in src.aiter_sse():
                seen.append(sse.json())
                if text() == seen_by_then:
                    arrived.set()
                if stop_after is not None and stop_after(seen):
                    return  # leaving the block closes the connection mid-turn

    async def moment() -> None:
        assert stop_when is not None
        await asyncio.to_thread(stop_when.wait, 30)
        if seen_by_then is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), 10)

    async with httpx.AsyncClient(timeout=60) as http:
        waits = [asyncio.create_task(read(http))]
        if stop_when is not None:
            waits.append(asyncio.create_task(moment()))
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in waits:
            task.cancel()  # a reader cancelled mid-stream closes its connection
        await asyncio.gather(*waits, return_exceptions=True)
        after_leaving()
        deadline = time.monotonic() + 30
        while (await http.get(url + "/ping")).json()["status"] != "Healthy":
            assert time.monotonic() < deadline, "the turn kept running after the client went away"
            await asyncio.sleep(0.05)
    return text()


def barged_in_then_asked_again(
    speech_endpoint: str,
    state_dir: Path,
    first_turn: Callable[[list[Any]], str | ScriptedCall],
    stop_after: Callable[[list[dict[str, Any]]], bool] | None = None,
    *,
    stop_when: threading.Event | None = None,
    seen_by_then: str | None = None,
    tokens_per_s: float = 40.0,
    tools: Sequence[Any] = (),
) -> tuple[str, list[Any], list[Any]]:
    """Turn 1 is cut short by the client, turn 2 asks again.

    Returns the text the client saw, the history turn 2 was given, and the stored history afterwards.
    """
    model = HistoryScriptedModel(
        lambda messages: first_turn(messages) if user_prompts(messages) == [FIRST] else "Yes.",
        tokens_per_s=tokens_per_s,
    )
    store = store_at(state_dir)
    session_id = new_session_id()

    async def scenario() -> str:
        async with serving(speech_endpoint, model, store, tools=tools) as url:
            # The AgentCore SDK notices a gone client only when the turn yields its next event, so a
            # tool that keeps the turn silent must end first: the test lets it go once the client left.
            seen = await _turn_cut_short(
                url, session_id, stop_after, stop_when, probe_tools.RELEASE.set, seen_by_then
            )
            model.tokens_per_s = 200.0
            [again] = await ask(url, [SECOND], session_id)
            assert again.text == "Yes.", again.summary()["errors"]
            return seen

    seen = asyncio.run(scenario())
    return seen, model.received[-1], stored_history(store, session_id)


@MODEL_SERVER_TIMEOUT
def test_barge_in_keeps_the_answer_as_written(model_server: RunningServer, tmp_path: Path) -> None:
    """Cut mid-answer while speaking: the next turn is given the prompt and the text written, no more."""
    seen, history, stored = barged_in_then_asked_again(
        model_server.ws_url,
        tmp_path,
        lambda messages: FOUR_SENTENCES,
        lambda events: sum(e["type"] == "audio_chunk" for e in events) >= 1,
        tokens_per_s=6.5,
    )
    (role_1, prompt_1), (role_2, written), (role_3, prompt_2) = texts(history)
    assert (role_1, prompt_1, role_2, role_3, prompt_2) == ("user", FIRST, "assistant", "user", SECOND)
    # What was written to the client: at least what it read before leaving, a strict prefix of the answer.
    assert written.startswith(seen) and FOUR_SENTENCES.startswith(written) and written != FOUR_SENTENCES
    assert is_valid_history(stored) and texts(stored)[:2] == texts(history)[:2]


def test_barge_in_during_a_tool_keeps_only_the_text_written(tmp_path: Path) -> None:
    """Cut while a tool runs: no tool call without its result is kept, only what was said before it."""
    probe_tools.reset()
    before = "Let me check that for you."

    def first_turn(messages: list[Any]) -> str | ScriptedCall:
        if texts(messages)[-1][1].startswith("<toolResult"):
            return FOUR_SENTENCES
        return ScriptedCall(before, tool=ToolCall("wait_for_listener"))

    seen, history, stored = barged_in_then_asked_again(
        dead_endpoint(),
        tmp_path,
        first_turn,
        stop_when=probe_tools.STARTED,
        # The text before the tool reaches the client while the tool runs (it is held until the client
        # left): the client waits for it once the tool started, as a listener would hear it.
        seen_by_then=before,
        tools=[probe_tools.wait_for_listener],
        tokens_per_s=4.0,
    )
    assert seen == before
    (role_1, prompt_1), (role_2, written), (role_3, prompt_2) = texts(history)
    assert (role_1, prompt_1, role_2, role_3, prompt_2) == ("user", FIRST, "assistant", "user", SECOND)
    # The text written before the tool, and at most the start of what followed it (the SDK saw the client
    # gone at the first event after the tool); never the tool call or its result.
    assert written.startswith(before) and (before + FOUR_SENTENCES).startswith(written)
    assert written != before + FOUR_SENTENCES
    assert "<tool" not in written
    assert is_valid_history(stored) and len(stored) == 4


def test_barge_in_before_any_text_leaves_no_trace(tmp_path: Path) -> None:
    seen, history, stored = barged_in_then_asked_again(
        dead_endpoint(),
        tmp_path,
        lambda messages: "Far too slow.",
        lambda events: events[-1]["type"] == "agent_start",
        tokens_per_s=0.2,  # five seconds before the first word
    )
    assert seen == ""
    # The AgentCore SDK notices the gone client only when the turn yields its next event; if the model's
    # first word came out before that, it counts as written. Either way the history is consistent.
    if texts(history) == [("user", SECOND)]:
        assert texts(stored) == [("user", SECOND), ("assistant", "Yes.")]
    else:
        (role_1, prompt_1), (role_2, written), (role_3, prompt_2) = texts(history)
        assert (role_1, prompt_1, role_2, role_3, prompt_2) == ("user", FIRST, "assistant", "user", SECOND)
        assert written and "Far too slow.".startswith(written)
        assert is_valid_history(stored)
