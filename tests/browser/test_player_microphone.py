"""The player's microphone: Chromium's fake capture device plays the user's question (rendered by the REAL
model server in another voice, with noise) into the page, hands-free; the real agent app hears it over
``/ws`` and answers (``ScriptedModel``, a test double with a known text) through the real model server.
What the app heard and said is read from the page's record of the events, not from waiting."""

from __future__ import annotations

import asyncio
import wave
from pathlib import Path
from typing import Any

import pytest

from benchmarks.speech_check import word_error_rate
from tests.browser.browser_harness import agent_app_with_page, browser_page
from tests.listening.spoken_user import render_user_speech, room_tone, with_noise
from tests.model_server_process import RunningServer
from tests.scripted_model import ScriptedModel

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."
TYPED = "And of Germany?"
TURN_TIMEOUT_MS = 180_000


def capture_file(model_server: RunningServer, path: Path) -> Path:
    """The fake microphone's WAV: five seconds of room tone, the question, then long room tone. Chromium
    plays the file from the moment the page opens the microphone, before the app may be listening on a
    busy machine, and loops it: the question must come late enough and not come round again."""
    speech = with_noise(asyncio.run(render_user_speech(model_server.ws_url, QUESTION)))
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(room_tone(5.0) + speech + room_tone(90.0))
    return path


async def _spoken_to(speech_endpoint: str, chromium: Path, profile: Path, capture: Path) -> dict[str, Any]:
    fake_microphone = (
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-audio-capture={capture}",
    )
    async with (
        agent_app_with_page(speech_endpoint, lambda: ScriptedModel(answer=ANSWER)) as url,
        browser_page(chromium, profile, extra_args=fake_microphone) as page,
    ):
        await page.goto(url + "/player/")
        await page.click("#mic")  # hands-free is the default
        await page.wait_for_function(
            """() => { const v = window.__player.voice();
                       const t = window.__player.turns().find((t) => t.mode === "voice");
                       return v && v.heard.length && v.answers.length && t && t.state === "done"; }""",
            timeout=TURN_TIMEOUT_MS,
        )
        # typed with the microphone open: the spoken conversation's next turn, answered as a spoken one
        await page.fill("#prompt", TYPED)
        await page.click("#send")
        await page.wait_for_function(
            """() => { const turns = window.__player.turns().filter((t) => t.mode === "voice");
                       return turns.length === 2 && turns[1].state === "done"; }""",
            timeout=TURN_TIMEOUT_MS,
        )
        voice: dict[str, Any] = await page.evaluate("window.__player.voice()")
        voice["turns"] = await page.evaluate("window.__player.turns()")
        voice["you"] = await page.inner_text("#you")
        voice["answer_text"] = await page.inner_text("#answer")
        await page.click("#mic")  # off: audio_stop
        await page.wait_for_function("() => window.__player.voice().state === 'closed'", timeout=30_000)
        return voice


def test_the_player_hears_the_microphone_and_speaks_the_answer(
    model_server: RunningServer, chromium: Path, tmp_path: Path
) -> None:
    capture = capture_file(model_server, tmp_path / "question.wav")
    voice = asyncio.run(_spoken_to(model_server.ws_url, chromium, tmp_path / "profile", capture))
    heard, typed = voice["heard"]
    assert word_error_rate(QUESTION, heard) <= 0.15, heard
    assert typed == voice["you"] == TYPED
    assert voice["answers"] == [ANSWER, ANSWER] and voice["answer_text"].strip() == ANSWER
    assert voice["errors"] == [] and voice["bargeIns"] == 0
    assert voice["framesSent"] > 100  # over 3 s of microphone audio went out
    spoken_turns = [t for t in voice["turns"] if t["mode"] == "voice"]
    assert [t["prompt"] for t in spoken_turns] == [heard, TYPED]
    for turn in spoken_turns:
        assert turn["chunks"] >= 1 and turn["audioSeconds"] > 1.0 and turn["errors"] == []
