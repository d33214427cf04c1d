"""The player keeps one conversation (one runtime session id) until "New conversation" starts another.

Real model server, real agent app over real HTTP, Chromium with the page's own controls. The LLM is
``HistoryScriptedModel`` (a test double) that says how many turns of the conversation it was given, so
the page's text shows whether the app remembered.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentcore_app.conversation.settings import SESSION_ID_PATTERN
from tests.agentcore_app.history_model import HistoryScriptedModel, user_prompts
from tests.browser.browser_harness import agent_app_with_page, browser_page, speak

if TYPE_CHECKING:
    from playwright.async_api import Page

    from tests.model_server_process import RunningServer

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

TURN_TIMEOUT_MS = 180_000


async def turn_done(page: Page, number: int) -> dict[str, Any]:
    await page.wait_for_function(
        "n => { const t = window.__player.turns()[n - 1]; return t && ['done', 'error'].includes(t.state); }",
        arg=number,
        timeout=TURN_TIMEOUT_MS,
    )
    turn: dict[str, Any] = (await page.evaluate("window.__player.turns()"))[number - 1]
    return turn


async def _three_turns(
    speech_endpoint: str, chromium: Path, profile: Path, state_dir: Path
) -> tuple[Any, ...]:
    model = HistoryScriptedModel(lambda messages: f"Turn {len(user_prompts(messages))} of this conversation.")
    async with (
        agent_app_with_page(speech_endpoint, lambda: model, state_dir=state_dir) as url,
        browser_page(chromium, profile) as page,
    ):
        await page.goto(url + "/player/")
        first_id = await page.evaluate("window.__player.sessionId")
        assert await page.inner_text("#conversation") == first_id
        turns = []
        for number in (1, 2):
            await speak(page, f"Question {number}.", "bidi")
            turns.append(await turn_done(page, number))
        await page.click("#new-conversation")
        second_id = await page.evaluate("window.__player.sessionId")
        assert await page.inner_text("#answer") == ""
        await speak(page, "Question 3.", "bidi")
        turns.append(await turn_done(page, 3))
        row = await page.locator(f"#turns tr[data-turn='{turns[2]['id']}'] td").all_inner_texts()
        return model, first_id, second_id, turns, row, await page.inner_text("#conversation")


def test_new_conversation_starts_a_new_session_id(
    model_server: RunningServer, chromium: Path, tmp_path: Path
) -> None:
    model, first_id, second_id, turns, row, shown = asyncio.run(
        _three_turns(model_server.ws_url, chromium, tmp_path / "profile", tmp_path / "conversations")
    )
    assert SESSION_ID_PATTERN.match(first_id) and SESSION_ID_PATTERN.match(second_id)
    assert first_id != second_id and shown == second_id
    assert [t["sessionId"] for t in turns] == [first_id, first_id, second_id]
    for turn in turns:
        assert turn["state"] == "done" and turn["errors"] == [] and turn["chunks"] >= 1, turn
    # The app remembered the first conversation and started the second afresh (the header reached it).
    assert [t["text"] for t in turns] == [
        "Turn 1 of this conversation.",
        "Turn 2 of this conversation.",
        "Turn 1 of this conversation.",
    ]
    assert [len(m) for m in model.received] == [1, 3, 1]
    assert row[-1] == second_id[-8:]
    assert sorted(p.name for p in (tmp_path / "conversations").iterdir()) == sorted(
        f"session_{sid}" for sid in (first_id, second_id)
    )
    assert re.fullmatch(r"player-[0-9a-f-]{32,36}", first_id)
