"""Conversations that remember, over real HTTP: the agent app on a free port, the session id as a header.

The LLM is ``HistoryScriptedModel`` (a test double that answers from the history it receives and checks
it); the speech side is the real Kokoro model server where the test is about what a listener hears, and
a dead endpoint (speech fails, the text goes on) where it is only about the stored history.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from agentcore_app.app import create_app
from agentcore_app.conversation.history import is_valid_history
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.local.stack import serve_asgi
from agentcore_app.local.turn_record import TurnRecord
from agentcore_app.runtime_session import SESSION_HEADER
from tests.agentcore_app import probe_tools
from tests.agentcore_app.conversation_harness import (
    ANSWER_1,
    FIRST,
    MODEL_SERVER_TIMEOUT,
    SECOND,
    ask,
    dead_endpoint,
    kinds,
    new_session_id,
    recall,
    serving,
    store_at,
    stored_history,
)
from tests.agentcore_app.history_model import HistoryScriptedModel, texts, user_prompts
from tests.scripted_model import ScriptedCall, ToolCall

if TYPE_CHECKING:
    from tests.model_server_process import RunningServer


# ------------------------------------------------------------------------------ remembering, restarts


@MODEL_SERVER_TIMEOUT
def test_second_answer_depends_on_the_first_over_real_http(
    model_server: RunningServer, tmp_path: Path
) -> None:
    model = HistoryScriptedModel(recall)
    store = store_at(tmp_path)
    session_id = new_session_id()

    async def scenario() -> list[TurnRecord]:
        async with serving(model_server.ws_url, model, store) as url:
            return await ask(url, [FIRST, SECOND], session_id)

    first, second = asyncio.run(scenario())
    for record in (first, second):
        assert "error" not in kinds(record) and "speech_error" not in kinds(record), record.summary()[
            "errors"
        ]
        assert kinds(record).count("audio_chunk") >= 1
    assert first.text == ANSWER_1
    assert second.text == f"You said this: {FIRST}"
    assert len(model.received) == 2 and len(model.received[1]) == 3  # the model's own check passed
    stored = stored_history(store, session_id)
    assert texts(stored) == [
        ("user", FIRST),
        ("assistant", ANSWER_1),
        ("user", SECOND),
        ("assistant", second.text),
    ]


@MODEL_SERVER_TIMEOUT
def test_a_restarted_app_with_the_same_state_dir_keeps_the_conversation(
    model_server: RunningServer, tmp_path: Path
) -> None:
    session_id = new_session_id()
    before, after = HistoryScriptedModel(recall), HistoryScriptedModel(recall)

    async def scenario() -> tuple[list[TurnRecord], list[TurnRecord]]:
        async with serving(model_server.ws_url, before, store_at(tmp_path)) as url:
            first = await ask(url, [FIRST], session_id)
        # A new app: a new store object, a new model object, nothing shared but the directory.
        async with serving(model_server.ws_url, after, store_at(tmp_path)) as url:
            second = await ask(url, [SECOND], session_id)
        return first, second

    (first,), (second,) = asyncio.run(scenario())
    assert first.text == ANSWER_1
    assert second.text == f"You said this: {FIRST}", second.summary()["errors"]
    assert "audio_chunk" in kinds(second)
    assert [user_prompts(m) for m in after.received] == [[FIRST, SECOND]]


def test_without_a_session_id_every_turn_stands_alone(tmp_path: Path) -> None:
    model = HistoryScriptedModel(lambda messages: f"Only {len(messages)} message here.")

    async def scenario() -> list[TurnRecord]:
        async with serving(dead_endpoint(), model, store_at(tmp_path)) as url:
            return await ask(url, [FIRST, SECOND], None)

    records = asyncio.run(scenario())
    assert [r.text for r in records] == ["Only 1 message here."] * 2
    assert list(tmp_path.iterdir()) == []  # nothing stored


BAD_SESSION_IDS = [
    "too-short-1234",  # AgentCore's ids have at least 33 characters
    "",
    "a" * 129,
    "../../../../etc/passwd-0123456789abcdef0123",
    "-starts-with-a-dash-0123456789abcdef0123456",
    "has space 0123456789abcdef0123456789abcdef",
    "has.a.dot.0123456789abcdef0123456789abcdef",
]


def test_a_malformed_session_id_is_refused_with_a_code(tmp_path: Path) -> None:
    model = HistoryScriptedModel(lambda messages: "never asked")

    async def scenario() -> list[tuple[int, list[dict[str, Any]]]]:
        out = []
        async with (
            serving(dead_endpoint(), model, store_at(tmp_path)) as url,
            httpx.AsyncClient(timeout=30) as http,
        ):
            for bad in BAD_SESSION_IDS:
                headers = {SESSION_HEADER: bad}
                async with aconnect_sse(
                    http, "POST", url + "/invocations", json={"prompt": "hi"}, headers=headers
                ) as source:
                    out.append(
                        (source.response.status_code, [sse.json() async for sse in source.aiter_sse()])
                    )
        return out

    for status, events in asyncio.run(scenario()):
        assert status == 200
        assert [e["type"] for e in events] == ["error"]
        assert events[0]["code"] == "bad_session_id" and "33-128" in events[0]["message"]
    assert model.received == [] and list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------- bounds


def test_only_the_last_turns_are_kept_and_the_history_stays_valid(tmp_path: Path) -> None:
    """max_turns=2 with a tool-calling first turn: turn 4 is given turns 2 and 3 only, whole."""
    from agentcore_app.agent.arithmetic import calculate

    def script(messages: list[Any]) -> str | ScriptedCall:
        if texts(messages)[-1][1].startswith("<toolResult"):
            return "It is forty two."
        if len(user_prompts(messages)) == 1:
            return ScriptedCall("Let me work it out.", tool=ToolCall("calculate", {"expression": "6*7"}))
        return f"Answer {len(user_prompts(messages))}."

    model = HistoryScriptedModel(script)
    store = store_at(tmp_path, max_turns=2)
    session_id = new_session_id()
    prompts = ["q1", "q2", "q3", "q4"]

    async def scenario() -> list[TurnRecord]:
        async with serving(dead_endpoint(), model, store, tools=[calculate]) as url:
            return await ask(url, prompts, session_id)

    records = asyncio.run(scenario())
    assert "<toolResult 42>" in [text for _, text in texts(model.received[1])]
    asked = [m for m in model.received if not texts(m)[-1][1].startswith("<toolResult")]
    seen_by_turn = [user_prompts(m) for m in asked]
    assert seen_by_turn == [["q1"], ["q1", "q2"], ["q1", "q2", "q3"], ["q2", "q3", "q4"]]
    assert [r.text for r in records[1:]] == ["Answer 2.", "Answer 3.", "Answer 3."]
    stored = stored_history(store, session_id)
    assert user_prompts(stored) == ["q3", "q4"] and is_valid_history(stored)


@pytest.mark.parametrize(
    ("bounds", "gaps_s", "remembered"),
    [
        # idle for longer than idle_expiry_s: the conversation starts afresh
        ({"idle_expiry_s": 100.0, "max_age_s": 10_000.0}, [50.0, 101.0], [True, False]),
        # never idle that long, but older than max_age_s: it starts afresh too
        ({"idle_expiry_s": 100.0, "max_age_s": 150.0}, [90.0, 90.0], [True, False]),
    ],
)
def test_conversations_expire_when_idle_or_old(
    tmp_path: Path, bounds: dict[str, float], gaps_s: list[float], remembered: list[bool]
) -> None:
    offset = [0.0]
    store = store_at(tmp_path, clock=lambda: time.time() + offset[0], **bounds)
    model = HistoryScriptedModel(lambda messages: f"I was given {len(user_prompts(messages))} prompts.")
    session_id = new_session_id()

    async def scenario() -> list[str]:
        answers = []
        async with serving(dead_endpoint(), model, store) as url:
            answers += [r.text for r in await ask(url, ["first"], session_id)]
            for gap in gaps_s:
                offset[0] += gap
                answers += [r.text for r in await ask(url, ["next"], session_id)]
        return answers

    answers = asyncio.run(scenario())
    assert answers[0] == "I was given 1 prompts."
    assert answers[1] == ("I was given 2 prompts." if remembered[0] else "I was given 1 prompts.")
    assert answers[2] == ("I was given 3 prompts." if remembered[1] else "I was given 1 prompts.")


# -------------------------------------------------------------------------------------------- tools


@MODEL_SERVER_TIMEOUT
def test_text_before_a_tool_is_heard_before_the_tool_answers_and_everything_once_in_order(
    model_server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tool (loaded through STRANDS_KOKORO_TOOLS) answers only once the client has the audio of the
    sentence before it and of the filler said while it ran (STRANDS_KOKORO_TOOL_FILLER*); everything is
    spoken once, in order, and the filler is heard but never written."""
    probe_tools.reset()
    monkeypatch.setenv("STRANDS_KOKORO_TOOLS", "tests.agentcore_app.probe_tools:wait_for_listener")
    monkeypatch.setenv("STRANDS_KOKORO_TOOL_FILLER", "Just a moment.")
    monkeypatch.setenv("STRANDS_KOKORO_TOOL_FILLER_AFTER_S", "0.2")
    before, filler, after = (
        "Let me check that for you.",
        "Just a moment.",
        "The answer is forty two. That is all.",
    )

    def script(messages: list[Any]) -> str | ScriptedCall:
        if texts(messages)[-1][1].startswith("<toolResult"):
            return after
        return ScriptedCall(before, tool=ToolCall("wait_for_listener"))

    model = HistoryScriptedModel(script)

    def spoken(events: list[dict[str, Any]]) -> str:
        return " ".join(" ".join(e["text"] for e in events if e["type"] == "sentence_complete").split())

    async def scenario() -> list[dict[str, Any]]:
        # Tools and filler from the settings; no session id, so no conversation is kept.
        app = create_app(
            speech_endpoint=model_server.ws_url, model=lambda: model, conversations=ConversationSettings(None)
        )
        app.logger.setLevel(logging.WARNING)
        events: list[dict[str, Any]] = []
        async with (
            serve_asgi(app) as url,
            httpx.AsyncClient(timeout=300) as http,
            aconnect_sse(http, "POST", url + "/invocations", json={"prompt": "Check."}) as source,
        ):
            async for sse in source.aiter_sse():
                events.append(sse.json())
                if spoken(events) == f"{before} {filler}":
                    probe_tools.RELEASE.set()  # the listener heard all that was said before the tool answered
        return events

    events = asyncio.run(scenario())
    kinds_seen = [e["type"] for e in events]
    assert "error" not in kinds_seen and "speech_error" not in kinds_seen
    assert "wait_for_listener" in model.tool_names[0] and "calculate" in model.tool_names[0]
    assert texts(model.received[1])[-1] == ("user", "<toolResult released>")  # released by the listener
    assert spoken(events) == f"{before} {filler} {after}"  # all of it, once, in order
    first_after = next(
        i for i, e in enumerate(events) if e["type"] == "text_delta" and e["text"].startswith("The")
    )
    assert spoken(events[:first_after]) == f"{before} {filler}"
    assert sum(e["type"] == "audio_chunk" for e in events[:first_after]) >= 2
    written = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert written == before + after  # the filler is heard, not written
