"""Conversations that remember, over real HTTP: the agent app on a free port, the session id as a header.

The LLM is ``HistoryScriptedModel`` (a test double that answers from the history it receives and checks
it); the speech side is the real Kokoro model server where the test is about what a listener hears, and
a dead endpoint (speech fails, the text goes on) where it is only about the stored history.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from agentcore_app.app import create_app
from agentcore_app.client import SESSION_HEADER, TurnRecord, run_turn
from agentcore_app.conversation_settings import ConversationSettings
from agentcore_app.conversations import AGENT_ID, ConversationStore
from agentcore_app.history import is_valid_history
from cdk.local_stack import free_port, serve_asgi
from tests.agentcore_app import probe_tools
from tests.agentcore_app.history_model import HistoryScriptedModel, texts, user_prompts
from tests.scripted_model import FOUR_SENTENCES, ScriptedCall, ScriptedModel, ToolCall

if TYPE_CHECKING:
    from strands.models.model import Model

    from tests.model_server_process import RunningServer

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
    from agentcore_app.arithmetic import calculate

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
