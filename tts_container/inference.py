"""One bounded executor in front of the one shared engine, serving the earliest deadline first.

Why a pool of its own: the engine is blocking, so it must never run on the event loop (SageMaker
expects ``/ping`` and new connections answered within 250 ms while synthesis runs). Every request
pulls ONE piece (a window or a segment) per call and asks for the next only after it got the previous
one, so each request has at most one call waiting.

Why earliest deadline first: the waiting calls belong to listeners in very different states. One has
80 ms of audio left before it hears silence, another has six seconds buffered, a newcomer is waiting for
its first word. Every call carries the moment its listener needs its audio
(:class:`~tts_container.listener.ListenerClock`), and the one engine thread always takes the call whose
moment comes first: a listener about to run dry goes before one far ahead, and a newcomer's first
window (due at its first-audio target) goes before a listener with seconds to spare. Nothing waits while
the engine is free (work-conserving): a listener far ahead is served whenever nobody is due sooner.

Cancellation rule: a call that has not started is withdrawn; a call already running is waited for
before the cancellation goes on, so no engine work outlives the request that asked for it and the
engine's iterator is never touched by two threads at once.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from strands_kokoro.uninterruptible import run_to_end

# Deadlines of work nobody listens to: fitting a voice in idle time runs only when no listener waits.
IDLE = math.inf


@dataclass(frozen=True, slots=True)
class PoolStats:
    """What the pool holds now and has done (``/stats``, ``/metrics``): no engine work may leak."""

    queued: int
    running: int
    completed: int
    busy_s: float  # wall time the engine thread spent in calls


@dataclass(order=True, slots=True)
class _Call:
    """A waiting engine call; ordered by deadline, then by arrival (equal deadlines are served FIFO)."""

    deadline: float
    seq: int
    fn: Callable[[], Any] = field(compare=False)
    result: asyncio.Future[Any] = field(compare=False)
    started: bool = field(default=False, compare=False)
    withdrawn: bool = field(default=False, compare=False)


class InferencePool:
    """Run blocking engine calls on one thread, one at a time, earliest deadline first.

    One thread: the model is shared and its runtime already uses every core (onnxruntime's intra-op
    threads, one GPU stream); and a voice's norm statistics, its calibration steps and a request's
    window generator are never touched by two threads at once. The waiting calls are ordered here, on
    the event loop, so the thread only ever sees the one call chosen next.
    """

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kokoro-inference")
        self._waiting: list[_Call] = []
        self._order = itertools.count()
        self._running = False
        self._completed = 0
        self._busy_s = 0.0

    def stats(self) -> PoolStats:
        queued = sum(not call.withdrawn for call in self._waiting)
        return PoolStats(queued, int(self._running), self._completed, self._busy_s)

    async def run[T](self, fn: Callable[[], T], *, deadline: float | None = None) -> T:
        """Run ``fn`` on the engine thread once every call due before ``deadline`` (``time.perf_counter()``
        seconds; default now: in arrival order among calls that name none) has run.

        On cancellation a call not yet started is withdrawn; one already running is waited for.
        """
        loop = asyncio.get_running_loop()
        due = time.perf_counter() if deadline is None else deadline
        call = _Call(due, next(self._order), fn, loop.create_future())
        heapq.heappush(self._waiting, call)
        self._dispatch()
        try:
            result: T = await asyncio.shield(call.result)
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
        """Start the earliest-due waiting call if the engine thread is free."""
        while self._waiting and not self._running:
            call = heapq.heappop(self._waiting)
            if call.withdrawn:
                continue
            self._running = call.started = True
            work = asyncio.get_running_loop().run_in_executor(self._executor, self._timed, call.fn)
            work.add_done_callback(functools.partial(self._done, call))

    def _timed(self, fn: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            return fn()
        finally:
            self._busy_s += time.perf_counter() - started

    def _done(self, call: _Call, work: asyncio.Future[Any]) -> None:
        self._running = False
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
