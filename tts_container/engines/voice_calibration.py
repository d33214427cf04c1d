"""Every voice streams: a voice's vocoder statistics are fitted in the server's idle time.

Windows need the voice's norm statistics (:mod:`tts_container.engines.norm_stats`); warm-up fits the
default voice's. The first request for another voice asks for its fit and is rendered whole;
:class:`VoiceCalibrator` renders the calibration sentences one per engine call, each only after
:data:`QUIET_S` with no request in synthesis, and the voice streams from then on. The fit is saved
next to the weights (once per voice and model file). A mix needs no fit of its own: its statistics are
derived from its voices'. A request arriving mid-step waits for that one sentence, only while a voice is
being fitted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Iterator

from strands_kokoro.protocol import voice_names
from tts_container.engines.base import Engine
from tts_container.scheduling.inference import IDLE, InferencePool

logger = logging.getLogger(__name__)

QUIET_S = 1.0  # no request in synthesis for this long: the engine is idle
POLL_S = 0.1  # how often a waiting step looks again (idle is a lack of events, so it is looked for)


class VoiceCalibrator:
    """The voices requested that need calibrating, and the one task that calibrates them in idle time."""

    def __init__(self, engine: Engine, pool: InferencePool, *, warmed: str | None = None) -> None:
        """``warmed``: the voice warm-up fitted, where the engine streams at all (None: it renders
        whole, so no voice needs anything)."""
        self._engine = engine
        self._pool = pool
        self._wanted: asyncio.Queue[str] = asyncio.Queue()
        self._known: set[str] = set() if warmed is None else {warmed}  # asked for already: never twice
        self._streams = warmed is not None
        self._serving = 0
        self._last_served = time.monotonic()
        self.pending: list[str] = []  # for /stats
        self.calibrated: list[str] = [] if warmed is None else [warmed]  # that stream now (for /stats)

    @contextlib.contextmanager
    def serving(self, voice: str) -> Iterator[None]:
        """Around one request's synthesis: the engine is busy, and ``voice`` is wanted."""
        if voice not in self._known:  # whether it needs calibrating is asked on the pool (reads the disk)
            self._known.add(voice)
            self._wanted.put_nowait(voice)
        self._serving += 1
        try:
            yield
        finally:
            self._serving -= 1
            self._last_served = time.monotonic()

    async def run(self) -> None:
        """Calibrate the wanted voices one by one, forever (cancelled with the server)."""
        while True:
            voice = await self._wanted.get()
            try:
                await self._calibrate(voice)
            except Exception:
                logger.warning("voice %s: calibration failed; it stays rendered whole", voice, exc_info=True)
            finally:
                if voice in self.pending:
                    self.pending.remove(voice)

    async def _calibrate(self, voice: str) -> None:
        calibration = await self._pool.run(functools.partial(self._engine.calibration, voice))
        if calibration is None:  # nothing to fit: the engine renders whole, or the voice is ready
            if self._streams and (names := voice_names(voice)) and set(names) <= self._engine.voices:
                self.calibrated.append(voice)  # fitted on an earlier start: read from the cache
            return
        self.pending.append(voice)
        logger.info("voice %s: fitting its vocoder statistics in idle time (until then: whole)", voice)
        started = time.perf_counter()
        for step in calibration.steps:
            await self._idle()
            await self._pool.run(step, deadline=IDLE)
        await self._pool.run(calibration.finish, deadline=IDLE)
        self.calibrated.append(voice)
        elapsed = time.perf_counter() - started
        logger.info("voice %s calibrated in %.1f s: its long segments now stream", voice, elapsed)

    async def _idle(self) -> None:
        """Until no request has been in synthesis for :data:`QUIET_S` and no engine call is waiting."""
        while True:
            pool = self._pool.stats()
            quiet_for = time.monotonic() - self._last_served
            if self._serving == 0 and quiet_for >= QUIET_S and pool.queued == 0 and pool.running == 0:
                return
            await asyncio.sleep(POLL_S)
