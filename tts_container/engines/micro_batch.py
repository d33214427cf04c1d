"""Batching across listeners: engine calls that meet inside the engine share one forward pass.

On a GPU one window leaves most of the device idle, so the pool runs up to ``max_batch`` calls side by
side, each on its own worker thread; each runs its prosody, then hands its window to
:meth:`MicroBatcher.submit`. The first to arrive while nobody renders leads: it waits at most
:data:`GATHER_WAIT_S` for the calls still in their prosody, renders every waiting window (grouped by
length, :func:`buckets`), hands out the results and steps down; one of those that arrived meanwhile leads
the next batch. The engine is never idle while windows wait, a call alone pays no wait, and the batcher
has no thread of its own. A window's audio never depends on its batch
(:mod:`tts_container.engines.torch_vocoder`).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from tts_container.engines.base import BatchCounts

# How long a leader waits for the calls inside the engine to reach the vocoder (they are running their
# prosody, ~5-15 ms on a GPU): long enough to catch calls started together, short enough that a
# listener's window never waits for much. A guess, not yet measured on a GPU.
GATHER_WAIT_S = 0.005
# Windows are batched with others of about their length: a bucket's longest is at most this many times
# its shortest plus BUCKET_SLACK_STEPS (padding then costs at most about a third of a pass, and short
# windows, cheap anyway, share a pass whatever their lengths).
BUCKET_RATIO = 1.5
BUCKET_SLACK_STEPS = 16


@dataclass(slots=True)
class _Job[Item, Result]:
    item: Item
    order: int
    size: int
    done: bool = False
    result: Result | None = None
    error: BaseException | None = None

    def outcome(self) -> Result:
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]


def buckets(sizes: Sequence[int], max_batch: int) -> list[list[int]]:
    """Indices of ``sizes`` grouped for passes of at most ``max_batch`` (see :data:`BUCKET_RATIO`),
    each group in order of arrival, the group holding the earliest arrival first."""
    groups: list[list[int]] = []
    for index in sorted(range(len(sizes)), key=lambda i: (sizes[i], i)):
        group = groups[-1] if groups else None
        if (
            group is None
            or len(group) >= max_batch
            or sizes[index] > BUCKET_RATIO * sizes[group[0]] + BUCKET_SLACK_STEPS
        ):
            groups.append([index])
        else:
            group.append(index)
    return sorted((sorted(group) for group in groups), key=lambda group: group[0])


@dataclass
class MicroBatcher[Item, Result]:
    """Renders the items submitted by concurrent callers in batches (see the module docstring).

    ``render`` takes a batch and returns each item's result in order; ``size`` is an item's length,
    which groups items into passes. A batch that fails is rendered again item by item, so one bad item
    fails its own caller only.
    """

    render: Callable[[Sequence[Item]], Sequence[Result]]
    size: Callable[[Item], int]
    max_batch: int = 1
    gather_wait_s: float = GATHER_WAIT_S
    _cond: threading.Condition = field(default_factory=threading.Condition, init=False)
    _pending: list[_Job[Item, Result]] = field(default_factory=list, init=False)
    _leading: bool = field(default=False, init=False)
    _expected: int = field(default=0, init=False)  # calls inside the engine that have not submitted yet
    _local: threading.local = field(default_factory=threading.local, init=False)
    _order: Iterator[int] = field(default_factory=itertools.count, init=False)
    _sizes: Counter[int] = field(default_factory=Counter, init=False)

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        """Count the calling thread as inside the engine until it leaves or submits: a leader waits
        (briefly) for such calls before it renders."""
        with self._cond:
            self._expected += 1
            self._local.expected = True
        try:
            yield
        finally:
            with self._cond:
                self._arrived()
                self._cond.notify_all()

    def counted[Piece](self, pieces: Iterator[Piece]) -> Iterator[Piece]:
        """``pieces``, each ``next()`` of it counted :meth:`inside` the engine; closing this closes it."""
        try:
            while True:
                with self.inside():
                    try:
                        piece = next(pieces)
                    except StopIteration:
                        return
                yield piece
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()

    def submit(self, item: Item) -> Result:
        """``item``'s result, rendered in a batch with whatever other callers submit meanwhile."""
        job = _Job[Item, Result](item, next(self._order), self.size(item))
        if self.max_batch <= 1:
            with self._cond:
                self._arrived()
            self._run([job])
            return job.outcome()
        with self._cond:
            self._arrived()
            self._pending.append(job)
            self._cond.notify_all()  # a leader gathering may be waiting for this call
            while self._leading and not job.done:
                self._cond.wait()
            if job.done:
                return job.outcome()
            self._leading = True
            self._gather()
            jobs, self._pending = self._pending, []
        try:
            for group in buckets([j.size for j in jobs], self.max_batch):
                self._run([jobs[index] for index in group])
        finally:
            with self._cond:
                self._leading = False
                self._cond.notify_all()
        return job.outcome()

    def counts(self) -> BatchCounts:
        with self._cond:
            sizes = dict(self._sizes)
        return BatchCounts(
            batches=sum(sizes.values()),
            items=sum(size * n for size, n in sizes.items()),
            largest=max(sizes, default=0),
            sizes=sizes,
        )

    def _arrived(self) -> None:
        """The calling thread no longer counts as a call that may still submit (lock held)."""
        if getattr(self._local, "expected", False):
            self._local.expected = False
            self._expected -= 1

    def _gather(self) -> None:
        """Wait (lock held) until no call inside the engine is still on its way, the batch is full, or
        :attr:`gather_wait_s` has passed."""
        deadline = time.monotonic() + self.gather_wait_s
        while self._expected > 0 and len(self._pending) < self.max_batch:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _run(self, jobs: list[_Job[Item, Result]]) -> None:
        """Render ``jobs`` in one pass (item by item if the pass fails) and hand out the results."""
        try:
            results = list(self.render([job.item for job in jobs]))
            outcomes: list[tuple[Result | None, BaseException | None]] = [(r, None) for r in results]
            passes = [len(jobs)]
        except Exception as failure:
            if len(jobs) == 1:
                outcomes, passes = [(None, failure)], [1]
            else:
                outcomes, passes = [self._alone(job) for job in jobs], [1] * len(jobs)
        except BaseException as failure:  # an interrupt: every caller hears of it, none waits forever
            outcomes, passes = [(None, failure)] * len(jobs), []
        with self._cond:
            for job, (result, error) in zip(jobs, outcomes, strict=True):
                job.result, job.error, job.done = result, error, True
            self._sizes.update(passes)
            self._cond.notify_all()

    def _alone(self, job: _Job[Item, Result]) -> tuple[Result | None, BaseException | None]:
        try:
            (result,) = self.render([job.item])
        except Exception as failure:
            return None, failure
        return result, None
