"""Barge-in in Chromium: Stop silences the page now, the server-side turn ends, and a new turn works.

Real model server, real agent app over real HTTP; the LLM is ``ScriptedModel`` (a test double) so the
test can see on the server side how far the answer got before the turn was cancelled, and the model
server's ``/stats`` show that its speech session and engine work stopped too: Stop is pressed while a
sentence is being synthesized.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.browser.browser_harness import agent_app_with_page, browser_page, speak
from tests.scripted_model import FOUR_SENTENCES, ScriptedModel
from tests.tts_container.server_harness import idle, synthesizing, wait_for_stats

if TYPE_CHECKING:
    from playwright.async_api import Page

    from tests.model_server_process import RunningServer

# The first test that uses the session's model server also waits for it to load (minutes on a loaded
# 2-core machine); the turns themselves are bounded by the page waits below.
pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

FIRST_AUDIO_TIMEOUT_MS = 150_000
SERVER_TURN_END_TIMEOUT_S = 30.0


async def ping_status(http: httpx.AsyncClient, url: str) -> str:
    """The SDK's task tracking: ``HealthyBusy`` while a turn runs, ``Healthy`` once none does."""
    return str((await http.get(url + "/ping")).json()["status"])


async def wait_for_idle_server(http: httpx.AsyncClient, url: str, since: float) -> float:
    """Seconds from ``since`` until the agent app reports no running turn; fails if it keeps running."""
    while time.monotonic() - since < SERVER_TURN_END_TIMEOUT_S:
        if await ping_status(http, url) == "Healthy":
            return time.monotonic() - since
        await asyncio.sleep(0.1)
    raise AssertionError("the server-side turn kept running after Stop")


async def _stop_then_speak_again(
    model_server: RunningServer, chromium: Path, profile: Path, transport: str
) -> tuple[ScriptedModel, dict[str, Any], dict[str, Any], dict[str, Any]]:
    # A long answer, written slowly: the model is still writing when the first sentence is heard.
    long_answer = ScriptedModel(answer=FOUR_SENTENCES * 10, tokens_per_s=6.5)
    short_answer = ScriptedModel(answer="Otters are back.", tokens_per_s=50)
    models = iter([long_answer, short_answer])
    speech_stats = model_server.http_url.removeprefix("http://")
    async with (
        agent_app_with_page(model_server.ws_url, lambda: next(models)) as url,
        browser_page(chromium, profile) as page,
        httpx.AsyncClient(timeout=10) as http,
    ):
        await page.goto(url + "/player/")
        await speak(page, "Tell me everything about otters.", "bidi", transport=transport)
        await page.wait_for_function("window.__player.outputLevel() > 0.001", timeout=FIRST_AUDIO_TIMEOUT_MS)
        assert await ping_status(http, url) == "HealthyBusy"
        assert not long_answer.finished
        # Stop lands while the model server synthesizes a sentence of this turn (the slow writer keeps
        # it busy; wait, bounded, for a moment when the engine is at work).
        await wait_for_stats(speech_stats, synthesizing, timeout_s=60)

        clicked = time.monotonic()
        await page.click("#stop")
        stopped = await stopped_page_state(page)
        server_end_s = await wait_for_idle_server(http, url, clicked)
        # Nothing could arrive after the server-side turn ended: the page read nothing after Stop.
        after: dict[str, Any] = await page.evaluate("window.__player.current()")
        assert after["reads"] == stopped["reads"] and after["text"] == stopped["text"]
        assert await page.evaluate("window.__player.outputLevel()") == 0
        # The model server let go too: the turn's speech session closed and no engine work goes on.
        speech_after = await wait_for_stats(speech_stats, idle, timeout_s=SERVER_TURN_END_TIMEOUT_S)
        print(f"\nserver-side turn ended {server_end_s:.2f} s after Stop; model server {speech_after}")

        await speak(page, "Are they back?", "bidi")
        await page.wait_for_function(
            "() => ['done', 'error'].includes(window.__player.turns()[1].state)",
            timeout=FIRST_AUDIO_TIMEOUT_MS,
        )
        again = (await page.evaluate("window.__player.turns()"))[1]
        return long_answer, stopped, again, speech_after


async def stopped_page_state(page: Page) -> dict[str, Any]:
    """Right after Stop: no source left, silence at the output, the Stop button disabled.

    What was read so far is returned; the caller checks nothing more is read once the server-side turn
    has ended (after which nothing more can come), rather than watching a fixed window.
    """
    assert await page.evaluate("window.__player.activeSources()") == 0
    await page.wait_for_function("window.__player.outputLevel() === 0", timeout=2_000)
    state: dict[str, Any] = await page.evaluate("window.__player.current()")
    assert await page.is_disabled("#stop")
    return state


@pytest.mark.parametrize("transport", ["ws", "sse"])
def test_stop_during_playback_cancels_the_turn_and_a_new_turn_works(
    model_server: RunningServer, chromium: Path, tmp_path: Path, transport: str
) -> None:
    """Stop is a barge-in on either transport: ``cancel`` on the same socket, or the stream's abort."""
    model, stopped, again, speech_after = asyncio.run(
        _stop_then_speak_again(model_server, chromium, tmp_path / "profile", transport)
    )
    assert stopped["transport"] == again["transport"] == transport
    assert stopped["state"] == "stopped" and stopped["end"] is None
    assert stopped["firstAudioMs"] is not None and stopped["chunks"] >= 1
    # Server side: the model was stopped mid-answer (the turn was cancelled, not run to its end).
    assert model.stopped_early and not model.finished
    assert model.tokens_sent < len(model.tokens)
    assert idle(speech_after)
    assert again["state"] == "done", again["errors"]
    assert again["text"] == "Otters are back." and again["chunks"] >= 1 and again["errors"] == []
    assert sum(s["duration"] for s in again["scheduled"]) * 1000 == pytest.approx(
        again["end"]["audio_ms"], rel=0.01
    )
