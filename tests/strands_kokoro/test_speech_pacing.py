"""Pacing end to end: a real Agent, KokoroSpeech, the real model server app over a real WebSocket, and a
fake engine whose speed is set (``PacedEngineDouble``), so the engine, not the machine, is the clock.

The double speaks a steady tone of exactly ``MS_PER_CHAR`` per character (no silence, so the server's
edge trimming keeps every sample) and sleeps ``rtf`` times that long before returning it: a Kokoro that
runs at a known real-time factor. The client side then plays what arrived in real time and counts the
gaps. The real engine's figures come from ``benchmarks/e2e_latency.py``.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest

from strands_kokoro import KokoroSpeech
from strands_kokoro.protocol import audio_ms
from tests.model_server_process import running_app
from tests.scripted_model import FOUR_SENTENCES, ScriptedCall
from tests.strands_kokoro.speech_doubles import Turn, make_agent, run_turn, words
from tts_container.app import WARMUP_TEXTS, create_app
from tts_container.engines.base import NATIVE_SAMPLE_RATE, Audio

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.timeout(300)]
MS_PER_CHAR = 12.0  # ~5x faster speech than Kokoro's, so a whole answer plays in a few seconds
ANSWER = FOUR_SENTENCES + (
    " Otters spend most of their lives in the water, but they come ashore to rest, groom and raise "
    "their pups. A newborn pup floats on its mother's belly while she swims on her back."
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class PacedEngineDouble:
    """A fake engine with a set real-time factor; it records every text it synthesized, in order."""

    rtf: float
    name: str = "paced"
    lanes: int = 1
    variant = "test double"
    texts: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def voices(self) -> frozenset[str]:
        return frozenset({"af_heart"})

    @property
    def renders_in_windows(self) -> bool:
        """This double renders each request in one call."""
        return False

    def calibration(self, voice: str) -> None:
        """Nothing to fit: this double renders every segment at once."""
        return None

    def segments(
        self, text: str, *, voice: str, speed: float, lang: str, context: object = None
    ) -> Iterator[Audio]:
        seconds = len(text) * MS_PER_CHAR / 1000.0
        with self._lock:
            self.texts.append(text)
        time.sleep(self.rtf * seconds)
        t = np.arange(round(seconds * NATIVE_SAMPLE_RATE)) / NATIVE_SAMPLE_RATE
        yield (0.4 * np.sin(2 * np.pi * 200.0 * t)).astype(np.float32)


def playback_stall_ms(turn: Turn) -> float:
    """A real-time player on the client: starts at the first audio; counts every moment it is idle."""
    play_end: float | None = None
    stalled = 0.0
    for event, at in zip(turn.events, turn.times, strict=True):
        if event["type"] != "audio_chunk":
            continue
        duration = audio_ms(len(base64.b64decode(event["audio"])), event["sample_rate"]) / 1000.0
        play_end = at if play_end is None else play_end
        stalled += max(0.0, at - play_end)
        play_end = max(play_end, at) + duration
    return stalled * 1000.0


async def speak(engine: PacedEngineDouble, **speech_options: object) -> Turn:
    async with running_app(create_app(lambda: engine)) as address:
        speech = KokoroSpeech(endpoint=f"ws://{address}", **speech_options)  # type: ignore[arg-type]
        # ~300 characters a second, as the embedded LLM writes on a CPU
        agent, _ = make_agent(speech, [ScriptedCall(ANSWER)], tokens_per_s=60.0)
        return await run_turn(speech.stream(agent, "Tell me about otters."))


def assert_spoken_once_in_order(turn: Turn, engine: PacedEngineDouble) -> None:
    engine_texts = [t for t in engine.texts if t not in WARMUP_TEXTS]
    assert words(" ".join(engine_texts)) == words(ANSWER)
    completes = turn.of("sentence_complete")
    assert [c["text"] for c in completes] == engine_texts
    expected_ms = sum(len(text) * MS_PER_CHAR for text in engine_texts)
    assert turn.events[-1]["audio_ms"] == pytest.approx(expected_ms, abs=2.0 * len(engine_texts))


async def test_an_engine_at_rtf_0_8_is_paced_without_gaps() -> None:
    engine = PacedEngineDouble(rtf=0.8)
    turn = await speak(engine)
    assert_spoken_once_in_order(turn, engine)
    end = turn.events[-1]
    assert 3 <= len(words(turn.of("sentence_complete")[0]["text"])) <= 6  # a short first phrase
    assert end["requests"] > 6  # the answer's 6 sentences, with the first ones cut smaller
    assert end["rtf"] == pytest.approx(0.8, rel=0.35)
    assert playback_stall_ms(turn) <= 250.0
    # the pacer's own predictions were close to what happened
    pairs = [
        (c["predicted_buffer_ms"], c["buffer_ms"])
        for c in turn.of("sentence_complete")
        if c["predicted_buffer_ms"] is not None and c["buffer_ms"] is not None
    ]
    assert pairs and all(predicted >= 0 for predicted, _ in pairs)


async def test_a_fast_engine_speaks_whole_sentences_after_the_first_phrase() -> None:
    engine = PacedEngineDouble(rtf=0.02)
    turn = await speak(engine)
    assert_spoken_once_in_order(turn, engine)
    texts = [c["text"] for c in turn.of("sentence_complete")]
    assert all(text.endswith((".", "!", "?")) for text in texts[1:])
    assert playback_stall_ms(turn) <= 250.0
