"""Awaiting work that cannot be interrupted (a thread's call) through any number of cancellations.

Why one helper: a thread cannot be stopped, so a task that started one must not end before it does,
whatever cancels it meanwhile (a hang-up, then the server's shutdown). ``asyncio.shield`` alone
survives one cancellation: a second one, while the task waits in its ``except`` branch, ends the wait
and the work outlives its owner (a conversation's lock released before its turn is written, an LLM
still sampling for a turn that is gone). Used by the model server's inference pool, the embedded
LLM's stream and the conversation store.
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
