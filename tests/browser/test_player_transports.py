"""The player's transports and audio formats in Chromium: every pairing plays the same answer gaplessly.

Real model server, real agent app over real sockets, the page's own Transport and Audio controls. The
LLM is ``ScriptedModel`` (a test double with a known answer). One page asks the same question four
ways: SSE with base64 PCM (the old path), SSE with base64 Opus, the WebSocket with binary PCM, and the
WebSocket with binary MP3 (the default, WebSocket with Opus, is what the other browser tests run).
Opus decodes to exactly the PCM's duration (pre_skip and end trimmed); MP3 keeps LAME's encoder delay.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.browser_harness import agent_app_with_page, browser_page, speak
from tests.browser.test_player_turns import assert_gapless, finish_turn
from tests.scripted_model import ScriptedModel

if TYPE_CHECKING:
    from tests.model_server_process import RunningServer

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

ANSWER = "Otters hold hands while they sleep."
WAYS = [("sse", "pcm"), ("sse", "opus"), ("ws", "pcm"), ("ws", "mp3")]
MP3_SLACK_MS = 120.0  # LAME's encoder delay (46 ms at 24 kHz) and its last frame's padding


async def _four_ways(speech_endpoint: str, chromium: Path, profile: Path) -> list[dict[str, Any]]:
    async with (
        agent_app_with_page(speech_endpoint, lambda: ScriptedModel(answer=ANSWER, tokens_per_s=50)) as url,
        browser_page(chromium, profile) as page,
    ):
        await page.goto(url + "/player/")
        turns = []
        for number, (transport, audio_format) in enumerate(WAYS, start=1):
            await speak(page, "Tell me about otters.", "bidi", transport=transport, audio_format=audio_format)
            turns.append(await finish_turn(page, number))
            row = await page.locator(f"#turns tr[data-turn='{turns[-1]['id']}'] td").all_inner_texts()
            assert row[9] == f"{transport} {audio_format}"
        return turns


def test_every_transport_and_format_plays_the_answer(
    model_server: RunningServer, chromium: Path, tmp_path: Path
) -> None:
    turns = asyncio.run(_four_ways(model_server.ws_url, chromium, tmp_path / "profile"))
    per_second = {}
    for turn, (transport, audio_format) in zip(turns, WAYS, strict=True):
        assert turn["state"] == "done", turn["errors"]
        assert (turn["transport"], turn["format"]) == (transport, audio_format)
        assert turn["errors"] == [] and turn["text"] == ANSWER
        assert turn["chunks"] == turn["end"]["chunks"] >= 1
        assert len(turn["scheduled"]) == turn["chunks"]
        assert_gapless(turn)
        played_ms = sum(s["duration"] for s in turn["scheduled"]) * 1000
        if audio_format == "mp3":
            assert turn["end"]["audio_ms"] - 1 <= played_ms <= turn["end"]["audio_ms"] + MP3_SLACK_MS
        else:
            assert played_ms == pytest.approx(turn["end"]["audio_ms"], abs=1.0)
        per_second[(transport, audio_format)] = sum(turn["reads"]) / (played_ms / 1000)
    print(f"\nbytes read per audio second: {per_second}")
    # What the page read: base64 PCM ~64 KB/s, binary PCM 48 KB/s, compressed a few KB/s.
    assert per_second[("ws", "pcm")] < per_second[("sse", "pcm")]
    assert per_second[("sse", "opus")] < per_second[("ws", "pcm")] / 6
    assert per_second[("ws", "mp3")] < per_second[("ws", "pcm")] / 6
