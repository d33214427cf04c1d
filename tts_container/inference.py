"""One bounded executor in front of the one shared engine.

Why a pool of its own: the engine is blocking, so it must never run on the event loop (SageMaker
expects ``/ping`` and new connections answered within 250 ms while synthesis runs). Every request
pulls ONE segment per call and asks for the next only after it got the previous one, so each
request has at most one call waiting; the executor's FIFO work queue then serves the waiting
requests in turn, segment by segment: a long text cannot starve a short one from another session.

Cancellation rule: a call that has not started is withdrawn; a call already running is waited for
before the cancellation goes on, so no engine work outlives the request that asked for it and the
engine's iterator is never touched by two threads at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from strands_kokoro.uninterruptible import run_to_end


@dataclass(frozen=True, slots=True)
class PoolStats:
    """Counters exposed on ``/stats`` so tests can see that no engine work leaks."""

    queued: int
    running: int
    completed: int


class InferencePool:
    """Run blocking engine calls on one thread, in order.

    One: the model is shared and its runtime already uses every core (onnxruntime's intra-op threads,
    one GPU stream); and a voice's norm statistics, its calibration steps and a request's window
    generator are never touched by two threads at once.
    """

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kokoro-inference")
        self._lock = threading.Lock()
        self._queued = 0
        self._running = 0
        self._completed = 0

    def stats(self) -> PoolStats:
        with self._lock:
            return PoolStats(queued=self._queued, running=self._running, completed=self._completed)

    async def run[T](self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the pool; on cancellation withdraw it, or wait for it if it already runs."""
        loop = asyncio.get_running_loop()
        done = asyncio.Event()

        def wake(_: Future[T]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting any more
                loop.call_soon_threadsafe(done.set)

        with self._lock:
            self._queued += 1
        future = self._executor.submit(self._counted, fn)
        future.add_done_callback(wake)
        try:
            await done.wait()
        except asyncio.CancelledError:
            if future.cancel():
                with self._lock:
                    self._queued -= 1
            else:
                await run_to_end(done.wait())  # the engine call cannot be interrupted
            raise
        return future.result()

    def _counted[T](self, fn: Callable[[], T]) -> T:
        with self._lock:
            self._queued -= 1
            self._running += 1
        try:
            return fn()
        finally:
            with self._lock:
                self._running -= 1
                self._completed += 1

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
