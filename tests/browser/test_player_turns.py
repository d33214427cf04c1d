"""A full turn in each mode, in Chromium, against the real local stack.

Real model server (the ``model_server`` fixture), real agent app over real HTTP, the page's own controls.
The LLM is ``ScriptedModel`` (a test double with a known answer) so the text can be compared exactly.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.browser_harness import ARTIFACTS, agent_app_with_page, browser_page, speak
from tests.scripted_model import ScriptedModel

if TYPE_CHECKING:
    from playwright.async_api import Page

    from tests.model_server_process import RunningServer

# The first test that uses the session's model server also waits for it to load (minutes on a loaded
# 2-core machine); the turns themselves are bounded by the page waits below.
pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

TURN_TIMEOUT_MS = 180_000
# Two sentences: enough to join two sentences' audio, short enough for a loaded 2-core CI machine.
ANSWER = "Otters hold hands while they sleep. They do it so they do not drift apart."
CONTIGUITY_S = 0.001


async def finish_turn(page: Page, turn_number: int) -> dict[str, Any]:
    """Wait until turn ``turn_number`` has streamed and played out; return its snapshot."""
    await page.wait_for_function(
        "n => { const t = window.__player.turns()[n - 1]; return t && t.state !== 'streaming' "
        "&& t.state !== 'playing'; }",
        arg=turn_number,
        timeout=TURN_TIMEOUT_MS,
    )
    turns: list[dict[str, Any]] = await page.evaluate("window.__player.turns()")
    return turns[turn_number - 1]


def js_round(value: float) -> int:
    """JavaScript's ``Math.round`` (halves go up), which the page uses; Python's ``round`` sends a
    half to the even neighbour, so 1082.5 ms would read 1083 on the page and 1082 here."""
    return math.floor(value + 0.5)


def assert_gapless(turn: dict[str, Any]) -> None:
    """Each buffer starts where the previous ended; a gap only where the queue had really run dry.

    An underrun (the previous buffer had already finished when the next chunk arrived) is a stall of the
    stream, not of the player: the player must then start the new buffer fresh, never overlap it.
    """
    scheduled = turn["scheduled"]
    for before, after in itertools.pairwise(scheduled):
        end = before["start"] + before["duration"]
        assert after["start"] - end > -CONTIGUITY_S, f"overlap: {before} then {after}"
        if after["start"] - end > CONTIGUITY_S:
            assert after["underrun"] and after["scheduledAt"] >= end, (
                f"gap without underrun: {before} {after}"
            )


def assert_full_turn(turn: dict[str, Any], mode: str) -> None:
    assert turn["state"] == "done", turn["errors"]
    assert turn["mode"] == mode and turn["end"]["mode"] == mode
    assert turn["errors"] == []
    assert turn["text"] == ANSWER
    assert turn["chunks"] == turn["end"]["chunks"] >= 1
    assert len(turn["scheduled"]) == turn["chunks"]
    scheduled_s = sum(s["duration"] for s in turn["scheduled"])
    assert scheduled_s * 1000 == pytest.approx(turn["end"]["audio_ms"], rel=0.01)
    assert scheduled_s > 2.0  # two spoken sentences, not a click
    assert_gapless(turn)
    assert 0 < turn["firstTextMs"] < turn["totalMs"]
    assert 0 < turn["firstAudioMs"] < turn["totalMs"]


async def _both_modes(
    speech_endpoint: str, chromium: Path, profile: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    async with (
        agent_app_with_page(speech_endpoint, lambda: ScriptedModel(answer=ANSWER, tokens_per_s=50)) as url,
        browser_page(chromium, profile) as page,
    ):
        await page.goto(url + "/player/")
        turns = []
        for number, mode in enumerate(("bidi", "batch"), start=1):
            await speak(page, "Tell me about otters.", mode)
            turn = await finish_turn(page, number)
            turns.append(turn)
            if mode == "bidi":  # read before the next turn resets them
                captions = await page.evaluate("window.__player.captions()")
            row = page.locator(f"#turns tr[data-turn='{turn['id']}'] td")
            cells = await row.all_inner_texts()
            assert cells[1] == mode and cells[4] == f"{js_round(turn['firstAudioMs'])} ms"
            assert cells[5] == f"{turn['audioSeconds']:.2f} s"
            assert await page.inner_text("#answer") == ANSWER
        ratio = await page.evaluate("window.__player.ratio()")
        waits = [t["firstAudioMs"] - t["firstTextMs"] for t in turns[:2]]  # from the model's first words
        assert ratio["ratio"] == pytest.approx(waits[1] / waits[0])
        assert (await page.inner_text("#ratio")).startswith("bidi first audio is ")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "turn.png"), full_page=True)
        return turns, captions


def test_a_full_turn_in_each_mode_plays_gaplessly(
    model_server: RunningServer, chromium: Path, tmp_path: Path
) -> None:
    (bidi, batch), captions = asyncio.run(_both_modes(model_server.ws_url, chromium, tmp_path / "profile"))
    assert_full_turn(bidi, "bidi")
    assert_captions_followed_the_audio(bidi, captions)
    assert_full_turn(batch, "batch")
    # batch speaks only after the whole answer was written; bidi starts while it is still being written.
    assert batch["firstAudioMs"] > batch["end"]["first_text_ms"]
    print(f"\nbidi: {summary(bidi)}\nbatch: {summary(batch)}")


def summary(turn: dict[str, Any]) -> str:
    return (
        f"first text {turn['firstTextMs']:.0f} ms, first audio {turn['firstAudioMs']:.0f} ms, "
        f"audio {turn['audioSeconds']:.2f} s, chunks {turn['chunks']}, total {turn['totalMs']:.0f} ms, "
        f"underruns {sum(s['underrun'] for s in turn['scheduled'])}"
    )


def assert_captions_followed_the_audio(turn: dict[str, Any], captions: dict[str, Any]) -> None:
    """The highlighted word advanced through the answer, in order, while its audio played."""
    answer = [w.strip(".,").lower() for w in ANSWER.split()]
    shown = [h["text"].lower() for h in captions["history"]]
    at = [h["at"] for h in captions["history"]]
    position = 0
    for word in shown:  # each highlighted word comes later in the answer than the one before
        position = answer.index(word, position) + 1
    assert len(shown) >= 0.8 * len(answer), (shown, captions["words"])
    # The first words too: the first request is heard while it is still synthesized, and its words are
    # timed (word_timings) before its audio, not at its end.
    assert shown[0] == answer[0], (shown, captions["words"])
    assert at == sorted(at)
    first = turn["scheduled"][0]["start"]
    last = turn["scheduled"][-1]["start"] + turn["scheduled"][-1]["duration"]
    assert first - 0.05 <= at[0] and at[-1] <= last + 0.1  # while the audio played, not before or after
