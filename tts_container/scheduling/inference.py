"""One bounded executor in front of the one shared engine, serving the earliest deadline first.

Why a pool of its own: the engine is blocking, so it must never run on the event loop (SageMaker
expects ``/ping`` and new connections answered within 250 ms while synthesis runs). Every request
pulls ONE piece (a window or a segment) per call and asks for the next only after it got the previous
one, so each request has at most one call waiting.

Why earliest deadline first: the waiting calls belong to listeners in very different states. One has
80 ms of audio left before it hears silence, another has six seconds buffered, a newcomer is waiting for
its first word. Every call carries the moment its listener needs its audio
(:class:`~tts_container.scheduling.listener.ListenerClock`), and the pool always starts the call whose
moment comes first: a listener about to run dry goes before one far ahead, and a newcomer's first
window (due at its first-audio target) goes before a listener with seconds to spare. Nothing waits while
the engine is free (work-conserving): a listener far ahead is served whenever nobody is due sooner.

Why lanes: an engine whose runtime scales poorly across cores renders more audio per second as two
calls at once, each on half the cores, than as one call on all of them (the int8 ONNX vocoder on 2
cores: ~25% more; :attr:`~tts_container.engines.base.Engine.lanes`). So while more than one request
is rendering (:meth:`InferencePool.rendering`), the pool runs their calls side by side, each told its
share (:data:`~tts_container.engines.base.call_lanes`); a request rendering alone has every core, so
a single listener's first audio costs what it always did. The requests count, not the calls waiting
at the moment: a request asks for its next call only after it has passed the previous piece on, so
two listeners' calls are seldom waiting at the same instant though both are always rendering.
Work nobody listens to (:data:`IDLE`) runs alone and on every core. What a call renders never depends
on its lane: the runtime gives the same samples on any number of threads. An engine that batches
across listeners (the torch engine on a GPU) has as many lanes as calls one forward pass renders: the
pool then runs that many calls at once and the engine renders their windows together
(:mod:`tts_container.engines.micro_batch`).

What a call cost the engine (:class:`CallShare`, what the capacity estimate is fed): its share of the
engine's busy time, each moment divided equally among the calls running then. Two calls side by side
for a second cost half a second each; thirty-two calls batched for a second, 1/32 s each; the shares of
all calls add up to the engine's busy time, so audio over shares is what the engine makes per second
at the load it had.

Cancellation rule: a call that has not started is withdrawn; a call already running is waited for
before the cancellation goes on, so no engine work outlives the request that asked for it and the
engine's iterator is never touched by two threads at once.
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
