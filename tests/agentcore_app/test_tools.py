"""The app's tools: the default set works offline through the real app, the setting is checked at start."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from agentcore_app.app import create_app
from agentcore_app.client import run_turn
from agentcore_app.conversation_settings import ConversationSettings
from agentcore_app.tools import (
    DEFAULT_TOOLS,
    FILLER_AFTER_ENV,
    FILLER_ENV,
    TOOLS_ENV,
    ToolSettingError,
    load_tool,
    load_tools,
    speech_setting,
    tool_setting,
)
from cdk.local_stack import free_port, serve_asgi
from tests.agentcore_app.history_model import HistoryScriptedModel, texts
from tests.scripted_model import ScriptedCall, ToolCall

PROBE = "tests.agentcore_app.probe_tools:wait_for_listener"


def test_the_default_tools_reach_the_model_and_answer_offline() -> None:
    """A scripted turn calls calculator, then current_time, through the real app over real HTTP."""

    def script(messages: list[Any]) -> str | ScriptedCall:
        last = texts(messages)[-1][1]
        if last == "<toolResult Result: 391>":
            return ScriptedCall("And the time.", tool=ToolCall("current_time", {"timezone": "UTC"}))
        if last.startswith("<toolResult "):
            assert re.fullmatch(r"<toolResult \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00>", last), last
            return "Done."
        return ScriptedCall("Let me work it out.", tool=ToolCall("calculator", {"expression": "17*23"}))

    model = HistoryScriptedModel(script, tokens_per_s=200)

    async def scenario() -> Any:
        app = create_app(
            speech_endpoint=f"ws://127.0.0.1:{free_port()}",
            model=lambda: model,
            conversations=ConversationSettings(None),
            speech_options={"reconnect_attempts": 0},
        )
        app.logger.setLevel(logging.WARNING)
        async with serve_asgi(app) as url, httpx.AsyncClient(timeout=60) as http:
            return await run_turn(url, "What is 17 times 23, and the time?", "bidi", http_client=http)

    record = asyncio.run(scenario())
    assert record.text == "Let me work it out.And the time.Done."
    assert len(model.received) == 3  # both tool results were checked inside the model
    assert set(model.tool_names[0]) == {"calculator", "current_time"}


def test_the_setting_adds_tools_to_the_defaults() -> None:
    assert tool_setting({TOOLS_ENV: f" {PROBE}, ,{PROBE}\n"}) == [PROBE, PROBE]
    tools = load_tools([PROBE])
    assert [t.tool_name for t in tools] == ["current_time", "calculator", "wait_for_listener"]
    assert len(DEFAULT_TOOLS) == 2


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
    with pytest.raises(ToolSettingError, match=re.escape(says)) as refused:
        load_tool(entry)
    assert TOOLS_ENV in str(refused.value) and repr(entry) in str(refused.value)


def test_two_tools_with_one_name_are_refused() -> None:
    with pytest.raises(ToolSettingError, match="a tool named 'calculator' is already loaded"):
        load_tools(["strands_tools.calculator:calculator"])


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
    with pytest.raises(ToolSettingError, match="between 0 and 60"):
        speech_setting({FILLER_AFTER_ENV: "soon"})
    with pytest.raises(ToolSettingError, match="a filler is a few words"):
        speech_setting({FILLER_ENV: "word " * 40})
