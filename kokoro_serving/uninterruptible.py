"""Awaiting work that cannot be interrupted (a thread's call) through any number of cancellations.

A thread cannot be stopped, so the task that started one must not end before it, whatever cancels it
meanwhile (a hang-up, then the server's shutdown). ``asyncio.shield`` survives one cancellation only: a
second, while the task waits in its ``except`` branch, would let the work outlive its owner. Used by the
model server's inference pool, the embedded LLM's stream and the conversation store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

__all__ = ["run_to_end"]


async def run_to_end[T](work: Awaitable[T]) -> T:
    """Await ``work`` to its end even if this task is cancelled meanwhile, any number of times; then
    re-raise the cancellation (the work's own failure, if any, is its cause)."""
    future = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(future)
        except asyncio.CancelledError:
            if future.done():  # the work itself was cancelled: nothing left to wait for
                raise
            cancelled = True
            continue
        except BaseException as failed:
            if cancelled:
                raise asyncio.CancelledError from failed
            raise
        if cancelled:
            raise asyncio.CancelledError
        return result
