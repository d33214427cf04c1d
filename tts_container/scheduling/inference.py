"""One bounded executor in front of the one shared engine, serving the earliest deadline first.

The engine is blocking, so it never runs on the event loop (``/ping`` answers while synthesis runs). A
request pulls one piece (a window or a segment) per call, so it has at most one call waiting; each call
carries the moment its listener needs it (:class:`~tts_container.scheduling.listener.ListenerClock`) and
the pool starts the one due first, never idling while work waits. While more than one request renders,
up to :attr:`~tts_container.engines.base.Engine.lanes` calls run side by side; :data:`IDLE` work runs
alone. :class:`CallShare` is a call's share of the engine's busy time (what capacity is fed). A call not
started is withdrawn on cancellation; a running one is waited for. Why: docs/architecture.md, "The
inference pool".
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kokoro_serving.uninterruptible import run_to_end
from tts_container.engines.base import call_lanes

# Deadlines of work nobody listens to: fitting a voice in idle time runs only when no listener waits.
IDLE = math.inf
# Worker threads at most: one per lane (threads are made only when calls run side by side).
MAX_LANES = 256


@dataclass(frozen=True, slots=True)
class CallShare:
    """What one call cost the engine: ``engine_s``, its share of the engine's busy time (each moment
    divided among the calls running then); ``lanes``, the calls the pool let share the engine with it
    (1: it had the engine to itself); ``peak``, the most calls running at once while it ran."""

    engine_s: float
    lanes: int = 1
    peak: int = 1


@dataclass(frozen=True, slots=True)
class PoolStats:
    """What the pool holds now and has done (``/stats``, ``/metrics``): no engine work may leak."""

    queued: int
    running: int
    completed: int
    busy_s: float  # wall time with at least one call running (two side by side count once)


@dataclass(order=True, slots=True)
class _Call:
    """A waiting engine call; ordered by deadline, then by arrival (equal deadlines are served FIFO)."""

    deadline: float
    seq: int
    fn: Callable[[], Any] = field(compare=False)
    result: asyncio.Future[Any] = field(compare=False)
    started: bool = field(default=False, compare=False)
    withdrawn: bool = field(default=False, compare=False)
    lanes: int = field(default=1, compare=False)  # how many calls share the engine while it runs


class InferencePool:
    """Run blocking engine calls on worker threads, earliest deadline first, one at a time or, on an
    engine with more than one :attr:`~tts_container.engines.base.Engine.lanes`, up to that many side
    by side.

    The waiting calls are ordered here, on the event loop, so a worker only ever sees the call chosen
    next; a request's window generator, a voice's norm statistics and its calibration steps are never
    touched by two threads at once (a request has at most one call waiting, and calibration runs alone).
    """

    def __init__(self) -> None:
        self._lanes = 1  # the engine's, once it is loaded (the pool loads it, alone)
        self._executor = ThreadPoolExecutor(max_workers=MAX_LANES, thread_name_prefix="kokoro-inference")
        self._sharing = _Sharing()
        self._waiting: list[_Call] = []
        self._order = itertools.count()
        self._running: list[_Call] = []
        self._completed = 0
        self._busy_s = 0.0
        self._busy_since: float | None = None
        self._rendering = 0

    @property
    def lanes(self) -> int:
        """How many calls may share the engine at once (the engine's lanes, set once it is loaded)."""
        return self._lanes

    @lanes.setter
    def lanes(self, lanes: int) -> None:
        if not 1 <= lanes <= MAX_LANES:
            raise ValueError(f"an engine's lanes must be 1 to {MAX_LANES}, got {lanes}")
        self._lanes = lanes

    def stats(self) -> PoolStats:
        queued = sum(not call.withdrawn for call in self._waiting)
        busy_s = self._busy_s
        if self._busy_since is not None:
            busy_s += time.perf_counter() - self._busy_since
        return PoolStats(queued, len(self._running), self._completed, busy_s)

    @contextlib.contextmanager
    def rendering(self) -> Iterator[None]:
        """Count a request as rendering while inside: from its first engine call to its last."""
        self._rendering += 1
        try:
            yield
        finally:
            self._rendering -= 1

    async def run[T](self, fn: Callable[[], T], *, deadline: float | None = None) -> T:
        """Run ``fn`` on a worker thread once every call due before ``deadline`` (``time.perf_counter()``
        seconds; default now: in arrival order among calls that name none) has run.

        On cancellation a call not yet started is withdrawn; one already running is waited for.
        """
        result, _ = await self.run_measured(fn, deadline=deadline)
        return result

    async def run_measured[T](
        self, fn: Callable[[], T], *, deadline: float | None = None
    ) -> tuple[T, CallShare]:
        """:meth:`run`, and what the call cost the engine (:class:`CallShare`)."""
        loop = asyncio.get_running_loop()
        due = time.perf_counter() if deadline is None else deadline
        call = _Call(due, next(self._order), fn, loop.create_future())
        heapq.heappush(self._waiting, call)
        self._dispatch()
        try:
            result: tuple[T, CallShare] = await asyncio.shield(call.result)
        except asyncio.CancelledError:
            if not call.started:
                call.withdrawn = True
            else:
                await run_to_end(asyncio.wait([call.result]))  # the engine call cannot be interrupted
                if not call.result.cancelled():
                    call.result.exception()  # its failure is nobody's now: retrieved, not reported
            raise
        return result

    def _dispatch(self) -> None:
        """Start the earliest-due waiting calls the engine has room for: on a free engine, one call on
        every core, or on one lane when other work is rendering too; beside a call on one lane, the next
        on the other."""
        while self._waiting:
            call = self._waiting[0]
            if call.withdrawn:
                heapq.heappop(self._waiting)
                continue
            if not self._running:
                shared = self._rendering > 1 or self._live_waiting() > 1
                together = self.lanes > 1 and call.deadline != IDLE and shared
                self._start(heapq.heappop(self._waiting), lanes=self.lanes if together else 1)
            elif len(self._running) < self._running[0].lanes and call.deadline != IDLE:
                self._start(heapq.heappop(self._waiting), lanes=self._running[0].lanes)
            else:
                return

    def _live_waiting(self) -> int:
        """Calls waiting that a listener waits for (idle work never shares the engine)."""
        return sum(not call.withdrawn and call.deadline != IDLE for call in self._waiting)

    def _start(self, call: _Call, *, lanes: int) -> None:
        call.started, call.lanes = True, lanes
        if not self._running:
            self._busy_since = time.perf_counter()
        self._running.append(call)
        work = asyncio.get_running_loop().run_in_executor(
            self._executor, _in_lane, call.fn, lanes, self._sharing
        )
        work.add_done_callback(functools.partial(self._done, call))

    def _done(self, call: _Call, work: asyncio.Future[Any]) -> None:
        self._running.remove(call)
        if not self._running and self._busy_since is not None:
            self._busy_s += time.perf_counter() - self._busy_since
            self._busy_since = None
        self._completed += 1
        if work.cancelled():
            call.result.cancel()
        elif (failure := work.exception()) is not None:
            call.result.set_exception(failure)
        else:
            call.result.set_result(work.result())
        self._dispatch()

    def shutdown(self) -> None:
        for call in self._waiting:
            call.withdrawn = True
        self._executor.shutdown(wait=True, cancel_futures=True)


def _in_lane(fn: Callable[[], Any], lanes: int, sharing: _Sharing) -> tuple[Any, CallShare]:
    """``fn()`` on a worker thread, telling the engine how many calls share it meanwhile, and the
    call's share of the engine."""
    token = call_lanes.set(lanes)
    entered = sharing.enter()
    try:
        result = fn()
    finally:
        engine_s, peak = sharing.leave(entered)
        call_lanes.reset(token)
    return result, CallShare(engine_s, lanes, peak)


class _Sharing:
    """The engine's busy time shared among the calls running, taken on the worker threads themselves.

    A virtual clock advances by ``dt / n`` while ``n`` calls run; a call's share is how far it
    advanced between its start and its end. The shares of all calls add up to the busy time.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._virtual = 0.0
        self._since = time.perf_counter()
        self._peaks: dict[int, int] = {}  # per running call: the most calls running at once meanwhile
        self._ids = itertools.count()

    def enter(self) -> tuple[int, float]:
        with self._lock:
            self._advance()
            call = next(self._ids)
            self._peaks[call] = 0
            running = len(self._peaks)
            for other in self._peaks:
                self._peaks[other] = max(self._peaks[other], running)
            return call, self._virtual

    def leave(self, entered: tuple[int, float]) -> tuple[float, int]:
        call, began = entered
        with self._lock:
            self._advance()
            return self._virtual - began, self._peaks.pop(call)

    def _advance(self) -> None:
        now = time.perf_counter()
        if self._peaks:
            self._virtual += (now - self._since) / len(self._peaks)
        self._since = now
