"""The app's tools: the default set works offline through the real app, the setting is checked at start."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from agentcore_app.agent.arithmetic import evaluate
from agentcore_app.agent.time_context import now_line
from agentcore_app.agent.tools import (
    DEFAULT_TOOLS,
    FILLER_AFTER_ENV,
    FILLER_ENV,
    TOOLS_ENV,
    load_tool,
    load_tools,
    speech_setting,
    tool_setting,
)
from agentcore_app.app import create_app
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.errors import SettingError
from agentcore_app.local.client import run_turn
from agentcore_app.local.stack import free_port, serve_asgi
from tests.agentcore_app.history_model import HistoryScriptedModel, now_lines, texts
from tests.scripted_model import ScriptedCall, ToolCall

PROBE = "tests.agentcore_app.probe_tools:wait_for_listener"


def ask_the_app(model: HistoryScriptedModel, prompt: str) -> Any:
    """One bidi turn through the real app (default tools) over real HTTP; the speech server is absent."""

    async def scenario() -> Any:
        app = create_app(
            speech_endpoint=f"ws://127.0.0.1:{free_port()}",
            model=lambda: model,
            conversations=ConversationSettings(None),
            speech_options={"reconnect_attempts": 0},
        )
        app.logger.setLevel(logging.WARNING)
        async with serve_asgi(app) as url, httpx.AsyncClient(timeout=60) as http:
            return await run_turn(url, prompt, "bidi", http_client=http)

    return asyncio.run(scenario())


def test_the_default_tool_and_the_time_reach_the_model_offline() -> None:
    """Through the real app over real HTTP: the question carries the time, calculate answers 17*23."""

    def script(messages: list[Any]) -> str | ScriptedCall:
        last = texts(messages)[-1][1]
        if last.startswith("<toolResult "):
            assert last == "<toolResult 391>", last
            assert now_lines(messages) == []  # the time is given with the question, not with tool results
            return "It is 391."
        (line,) = now_lines(messages)
        shape = r"<now>\w+day \d{1,2} \w+ \d{4}, \d\d:\d\d (UTC\S*|\S+ \(UTC[-+]\d\d:\d\d\))</now>"
        assert re.fullmatch(shape, line), line
        return ScriptedCall("Let me work it out.", tool=ToolCall("calculate", {"expression": "17*23"}))

    model = HistoryScriptedModel(script, tokens_per_s=200)

    record = ask_the_app(model, "What is 17 times 23?")
    assert record.text == "Let me work it out.It is 391."
    assert len(model.received) == 2  # the tool result was checked inside the model
    assert model.tool_names[0] == ["calculate"]


def test_the_time_line_names_the_day_the_time_and_the_zone() -> None:
    moment = datetime(2026, 12, 1, 14, 5, 9, tzinfo=timezone(timedelta(hours=-5), "EST"))
    assert now_line(moment) == "<now>Tuesday 1 December 2026, 14:05 EST (UTC-05:00)</now>"
    in_utc = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
    assert now_line(in_utc) == "<now>Tuesday 1 December 2026, 14:05 UTC</now>"
    india = datetime(2026, 12, 1, 14, 5, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert now_line(india) == "<now>Tuesday 1 December 2026, 14:05 UTC+05:30</now>"


def test_a_bad_tool_argument_is_an_error_result_and_the_turn_goes_on() -> None:
    """The model asks for something calculate refuses; it reads why and answers."""

    def script(messages: list[Any]) -> str | ScriptedCall:
        last = texts(messages)[-1][1]
        if last.startswith("<toolResult "):
            assert (
                last == "<toolResult Error: cannot evaluate '9**9**9' (the exponent 387420489 is too large "
                "(at most 10000))>"
            ), last
            return "That number is too large to say."
        return ScriptedCall("Let me see.", tool=ToolCall("calculate", {"expression": "9**9**9"}))

    model = HistoryScriptedModel(script, tokens_per_s=200)

    record = ask_the_app(model, "What is nine to the nine to the nine?")
    assert record.text == "Let me see.That number is too large to say."
    assert len(model.received) == 2


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("17*23", "391"),
        ("2^10", "1024"),
        ("(3 + 4.5) * 2", "15"),
        ("0.1 + 0.2", "0.3"),
        ("sqrt(2)", "1.41421356237"),
        ("7 // 2 + 10 % 3", "4"),
        ("factorial(20)", "2.43290200818e+18"),
        ("round(pi, 4)", "3.1416"),
        ("3 > 2", "true"),
        ("2 ** -2", "0.25"),
    ],
)
def test_calculate_works_out_arithmetic(expression: str, result: str) -> None:
    assert evaluate(expression) == result


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("", "the expression is empty"),
        ("1 +", "not an arithmetic expression"),
        ("x + 1", "not an arithmetic expression ('x' is not defined"),
        ("__import__('os').system('id')", "not an arithmetic expression"),
        ("(1).__class__", "not an arithmetic expression"),
        ("'ab' * 3", "gives a str, not a number"),
        ("1 / 0", "division by zero"),
        ("9**9**9", "the exponent 387420489 is too large"),
        ("(10**1000)**9000", "the power is too large to work out"),
        ("factorial(100000)", "factorial takes a whole number from 0 to 1000"),
        ("1e308 * 10", "not a finite number"),
        ("log(-1)", "math domain error"),
        ("(-8) ** (1/3)", "gives a complex, not a number"),
        ("1+" * 300 + "1", "at most 500"),
    ],
)
def test_calculate_refuses_what_is_not_plain_arithmetic(expression: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        evaluate(expression)


def test_the_setting_adds_tools_to_the_defaults() -> None:
    assert tool_setting({TOOLS_ENV: f" {PROBE}, ,{PROBE}\n"}) == [PROBE, PROBE]
    tools = load_tools([PROBE])
    assert [t.tool_name for t in tools] == ["calculate", "wait_for_listener"]
    assert DEFAULT_TOOLS == ("agentcore_app.agent.arithmetic:calculate",)


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("no_colon_here", "write it as 'package.module:attribute'"),
        ("module:", "write it as"),
        ("no.such.module:tool", "module 'no.such.module' cannot be imported (ModuleNotFoundError)"),
        ("tests.agentcore_app.probe_tools:nothing", "has no attribute 'nothing'"),
        ("tests.agentcore_app.probe_tools:not_a_tool", "is a str, not a Strands tool"),
        ("tests.agentcore_app.probe_tools:reset", "is a function, not a Strands tool"),
    ],
)
def test_a_bad_entry_is_refused_with_what_is_wrong(entry: str, says: str) -> None:
    with pytest.raises(SettingError, match=re.escape(says)) as refused:
        load_tool(entry)
    assert TOOLS_ENV in str(refused.value) and repr(entry) in str(refused.value)


def test_two_tools_with_one_name_are_refused() -> None:
    with pytest.raises(SettingError, match="a tool named 'calculate' is already loaded"):
        load_tools(["agentcore_app.agent.arithmetic:calculate"])


@pytest.mark.slow
def test_python_m_agentcore_app_stops_on_a_bad_tool_setting_with_one_line() -> None:
    env = {**os.environ, TOOLS_ENV: "no.such.module:tool"}
    result = subprocess.run(
        [sys.executable, "-m", "agentcore_app", "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {TOOLS_ENV} entry 'no.such.module:tool': module 'no.such.module' cannot be imported "
        "(ModuleNotFoundError)"
    )
    assert "Traceback" not in result.stderr


def test_the_tool_filler_settings_become_speech_options() -> None:
    assert speech_setting({}) == {}
    assert speech_setting({FILLER_ENV: "  Hold   on. ", FILLER_AFTER_ENV: "2.5"}) == {
        "tool_filler": "Hold on.",
        "tool_filler_after_s": 2.5,
    }
    assert speech_setting({FILLER_ENV: "off"}) == {"tool_filler": None}
    with pytest.raises(SettingError, match="between 0 and 60"):
        speech_setting({FILLER_AFTER_ENV: "soon"})
    with pytest.raises(SettingError, match="a filler is a few words"):
        speech_setting({FILLER_ENV: "word " * 40})
