"""Every voice streams: a voice other than the warm-up one is fitted in the server's idle time.

A unit part (a test double engine whose calibration steps are recorded) pins the bookkeeping: a step
waits until no request is in synthesis, a voice is fitted once, a failing one is logged and the next
still fitted. The real part starts its own model server (real weights, a cache of its own that knows
only af_heart's statistics) and shows the structural change a listener hears: the same long sentence
in ``bf_emma`` is one engine call before the voice is fitted and a window per call after it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from agentcore_app.local.stack import start_model_server, stop_model_server
from benchmarks.voice_calibration import cache_knowing_only_af_heart
from tests.tts_container.server_harness import stats, wait_for_stats
from tts_container.engines import voice_calibration
from tts_container.engines.base import VoiceCalibration
from tts_container.engines.voice_calibration import VoiceCalibrator
from tts_container.scheduling.inference import InferencePool
from tts_container.weights.cache import CACHE_ENV

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CalibrationDoubleEngine:
    """A test double: each voice in ``needs`` has three calibration steps, recorded as they run."""

    name = "double"
    lanes = 1
    variant = "test double"

    def __init__(self, needs: set[str], failing: frozenset[str] = frozenset()) -> None:
        self.needs = needs
        self.failing = failing
        self.ran: list[str] = []

    @property
    def voices(self) -> frozenset[str]:
        return frozenset({"af_heart", "bf_emma", "am_adam", "broken"})

    @property
    def renders_in_windows(self) -> bool:
        return True

    def segments(self, *args: object, **kwargs: object) -> Iterator[object]:
        return iter(())

    def calibration(self, voice: str) -> VoiceCalibration | None:
        if voice not in self.needs:
            return None

        def step(index: int) -> None:
            if voice in self.failing:
                raise RuntimeError("the engine failed")
            self.ran.append(f"{voice}:{index}")

        def finish() -> None:
            self.ran.append(f"{voice}:fitted")
            self.needs.discard(voice)

        return VoiceCalibration(voice, tuple(lambda i=i: step(i) for i in range(3)), finish)


async def until(done: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Until ``done()`` (the calibrator runs on this loop: polling it is the test's clock)."""
    async with asyncio.timeout(timeout_s):
        while True:
            if done():
                return
            await asyncio.sleep(0.01)


async def test_calibration_waits_until_no_request_is_in_synthesis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(voice_calibration, "QUIET_S", 0.2)
    monkeypatch.setattr(voice_calibration, "POLL_S", 0.01)
    engine = CalibrationDoubleEngine({"bf_emma"})
    pool = InferencePool()
    calibrator = VoiceCalibrator(engine, pool)  # type: ignore[arg-type]
    async with asyncio.TaskGroup() as tasks:
        runner = tasks.create_task(calibrator.run())
        with calibrator.serving("bf_emma"), calibrator.serving("af_heart"):
            await asyncio.sleep(0.5)  # requests in synthesis: nothing of the calibration may run
            assert engine.ran == []
            assert calibrator.pending == ["bf_emma"]
        await until(lambda: bool(calibrator.calibrated))
        with calibrator.serving("bf_emma"):  # asked again once fitted: nothing more to do
            pass
        await asyncio.sleep(0.3)
        runner.cancel()
    pool.shutdown()
    assert engine.ran == ["bf_emma:0", "bf_emma:1", "bf_emma:2", "bf_emma:fitted"]
    assert calibrator.calibrated == ["bf_emma"] and calibrator.pending == []


async def test_the_voices_that_stream_are_listed_the_warmed_one_and_those_fitted_earlier_too() -> None:
    """A new user's /stats lacked af_heart, which warm-up fitted; a voice fitted on an earlier start
    (nothing to do now) is listed once asked for; a voice the engine does not have never is."""
    engine = CalibrationDoubleEngine(set())
    pool = InferencePool()
    calibrator = VoiceCalibrator(engine, pool, warmed="af_heart")  # type: ignore[arg-type]
    assert calibrator.calibrated == ["af_heart"]
    async with asyncio.TaskGroup() as tasks:
        runner = tasks.create_task(calibrator.run())
        for voice in ("af_heart", "bf_emma", "zz_nobody"):
            with calibrator.serving(voice):
                pass
        await until(lambda: len(calibrator.calibrated) == 2)
        await asyncio.sleep(0.1)
        runner.cancel()
    pool.shutdown()
    assert calibrator.calibrated == ["af_heart", "bf_emma"] and engine.ran == []


async def test_a_failed_calibration_is_logged_and_the_next_voice_is_still_fitted(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(voice_calibration, "QUIET_S", 0.0)
    monkeypatch.setattr(voice_calibration, "POLL_S", 0.01)
    engine = CalibrationDoubleEngine({"broken", "am_adam"}, failing=frozenset({"broken"}))
    pool = InferencePool()
    calibrator = VoiceCalibrator(engine, pool)  # type: ignore[arg-type]
    caplog.set_level(logging.INFO, logger=voice_calibration.__name__)
    async with asyncio.TaskGroup() as tasks:
        runner = tasks.create_task(calibrator.run())
        for voice in ("broken", "am_adam"):
            with calibrator.serving(voice):
                pass
        await until(lambda: bool(calibrator.calibrated))
        runner.cancel()
    pool.shutdown()
    assert calibrator.calibrated == ["am_adam"] and calibrator.pending == []
    assert engine.ran == ["am_adam:0", "am_adam:1", "am_adam:2", "am_adam:fitted"]
    assert "voice broken: calibration failed" in caplog.text


LONG_SENTENCE = (
    "The ferry left the harbour at dawn, carrying farmers, their goats and a crate of apples across the "
    "wide grey river to the market on the other side."
)


def _saved_stats(root: Path) -> list[Path]:
    return list((root / "norm-stats").rglob("*.npz"))  # each vocoder variant's fits


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_a_voice_other_than_the_default_streams_once_fitted_in_idle_time(
    model_server: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # model_server: the shared server has filled the real cache (weights and af_heart's statistics).
    monkeypatch.setenv(CACHE_ENV, str(cache_knowing_only_af_heart(tmp_path)))
    server = await asyncio.to_thread(start_model_server, ready_timeout_s=300)
    address = server.http_url.removeprefix("http://")
    try:
        assert (await stats(address))["voices_calibrated"] == ["af_heart"]  # warm-up fitted it
        async with httpx.AsyncClient(timeout=300) as client:

            async def engine_calls(voice: str) -> tuple[int, bytes]:
                before = (await stats(address))["inference_completed"]
                response = await client.post(
                    f"{server.http_url}/invocations", json={"text": LONG_SENTENCE, "voice": voice}
                )
                assert response.status_code == 200, response.text
                return (await stats(address))["inference_completed"] - before, response.content

            whole_calls, whole_audio = await engine_calls("bf_emma")
            await wait_for_stats(address, lambda s: "bf_emma" in s["voices_calibrated"], timeout_s=400)
            windowed_calls, windowed_audio = await engine_calls("bf_emma")
    finally:
        stop_model_server(server)
    # Before: the sentence rendered in one call (plus starting and ending the iterator, and the
    # calibrator asking the engine whether the voice needs fitting); after: in windows, as the default
    # voice always is, each its own call. The voice's fit is kept for next time.
    assert whole_calls <= 4, whole_calls
    assert windowed_calls >= whole_calls + 3, (whole_calls, windowed_calls)
    assert any(path.name == "bf_emma.npz" for path in await asyncio.to_thread(_saved_stats, tmp_path))
    # Same durations either way: the windowed rendition is as long as the whole one, within 1%.
    assert len(windowed_audio) == pytest.approx(len(whole_audio), rel=0.01)
