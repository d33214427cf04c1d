"""``run_to_end``: work that cannot be interrupted outlives no cancellation of the task awaiting it."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kokoro_serving.uninterruptible import run_to_end

pytestmark = pytest.mark.anyio


def _slow_write(done: threading.Event) -> str:
    time.sleep(0.3)
    done.set()
    return "written"


@pytest.mark.parametrize("cancels", [0, 1, 2, 5])
async def test_the_thread_has_finished_whenever_the_awaiting_task_ends(cancels: int) -> None:
    done = threading.Event()
    task = asyncio.create_task(run_to_end(asyncio.to_thread(_slow_write, done)))
    for _ in range(cancels):  # a barge-in, then a hang-up, then the server's shutdown...
        await asyncio.sleep(0.02)
        task.cancel()
    if cancels:
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        assert await task == "written"
    assert done.is_set()


async def test_a_failure_of_the_work_is_raised_and_after_a_cancel_is_the_cancels_cause() -> None:
    async def failing() -> None:
        await asyncio.sleep(0.1)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        await run_to_end(failing())
    task = asyncio.create_task(run_to_end(failing()))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as cancelled:
        await task
    assert isinstance(cancelled.value.__cause__, OSError)


async def test_work_cancelled_itself_ends_the_wait() -> None:
    work = asyncio.ensure_future(asyncio.sleep(10))
    waiting = asyncio.create_task(run_to_end(work))
    await asyncio.sleep(0)
    work.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
