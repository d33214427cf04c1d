"""Warm-up's first-audio probe against test double engines slow on the long probe sentence.

A machine under load (a test suite starting beside the server) makes the long probe slow. An engine
that renders in windows streams by construction, so the probe must still report its first audio and the
default voice as fitted; only an engine that renders whole sentences is judged by the probe's timing.
Real uvicorn over real sockets; the real engine's warm-up runs in test_server_real.py and
test_voice_calibration.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from websockets.asyncio.client import connect

from strands_kokoro.protocol import DEFAULT_VOICE, WS_PATH
from tests.model_server_process import running_app
from tests.tts_container.server_fakes import ToneEngine
from tests.tts_container.server_harness import read_session_start, stats
from tts_container.app import PROBE_LONG, PROBE_SHARED, STREAMING_SLACK_MS, create_app
from tts_container.engines.base import Audio, call_lanes

pytestmark = pytest.mark.anyio

LONG_PROBE_DELAY_S = 3 * STREAMING_SLACK_MS / 1000  # far past what a whole-rendering engine is allowed


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class SlowLongProbeEngineDouble(ToneEngine):
    """A test double: ToneEngine, slow to start the long probe sentence, windowed or not as told."""

    windowed: bool = False

    @property
    def renders_in_windows(self) -> bool:
        return self.windowed

    def segments(
        self, text: str, *, voice: str, speed: float, lang: str, context: object = None
    ) -> Iterator[Audio]:
        if text == PROBE_LONG:
            time.sleep(LONG_PROBE_DELAY_S)
        yield from super().segments(text, voice=voice, speed=speed, lang=lang, context=context)


@dataclass
class TwoLaneEngineDouble(ToneEngine):
    """A test double: ToneEngine with two lanes (as onnxruntime on a CPU), noting each sentence's lanes."""

    lanes: int = 2
    variant = "test double"
    delay_s: float = 0.05
    shared: list[tuple[str, int]] | None = None

    def segments(
        self, text: str, *, voice: str, speed: float, lang: str, context: object = None
    ) -> Iterator[Audio]:
        if self.shared is not None:
            self.shared.append((text, call_lanes.get()))
        yield from super().segments(text, voice=voice, speed=speed, lang=lang, context=context)


async def test_warm_up_measures_an_engine_with_two_lanes_side_by_side() -> None:
    """The capacity estimate starts from calls side by side: calls alone would admit fewer listeners."""
    engine = TwoLaneEngineDouble(shared=[])
    async with running_app(create_app(lambda: engine)) as address:
        served = await stats(address)
    assert engine.shared is not None
    assert [lanes for text, lanes in engine.shared if text == PROBE_SHARED] == [2, 2]
    assert all(lanes == 1 for text, lanes in engine.shared if text != PROBE_SHARED)  # the probes alone
    assert served["inference_lanes"] == 2 and served["capacity_audio_per_s"] > 0


async def test_a_windowed_engine_slow_on_the_long_probe_streams_and_its_voice_is_fitted() -> None:
    async with running_app(create_app(lambda: SlowLongProbeEngineDouble(windowed=True))) as address:
        async with connect(f"ws://{address}{WS_PATH}") as ws:
            hello = await read_session_start(ws)
        first_audio_ms = hello["first_audio_ms"]
        assert isinstance(first_audio_ms, float)
        assert first_audio_ms >= LONG_PROBE_DELAY_S * 1000 * 0.9  # the long probe's time, reported as it is
        assert (await stats(address))["voices_calibrated"] == [DEFAULT_VOICE]


async def test_a_whole_rendering_engine_slow_on_the_long_probe_is_told_to_grow_with_length() -> None:
    async with running_app(create_app(lambda: SlowLongProbeEngineDouble(windowed=False))) as address:
        async with connect(f"ws://{address}{WS_PATH}") as ws:
            hello = await read_session_start(ws)
        assert hello["first_audio_ms"] is None
        assert (await stats(address))["voices_calibrated"] == []
