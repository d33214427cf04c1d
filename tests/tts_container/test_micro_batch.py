"""The micro-batcher on real threads with a render double: who leads, what is gathered, what fails.

No model: ``render`` records each batch it is given and returns each item doubled. Where a test needs
calls to meet, the first batch is held behind an event until the others are waiting (no timing).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from tts_container.engines.micro_batch import BUCKET_SLACK_STEPS, MicroBatcher, buckets


class RenderDouble:
    """Records each batch; the first one waits for ``release`` (so others gather meanwhile)."""

    def __init__(self, hold_first: bool = False) -> None:
        self.batches: list[list[int]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        if not hold_first:
            self.release.set()
        self._lock = threading.Lock()

    def __call__(self, items: Sequence[int]) -> list[int]:
        with self._lock:
            self.batches.append(list(items))
            first = len(self.batches) == 1
        if first:
            self.entered.set()
            assert self.release.wait(10)
        if any(item < 0 for item in items):
            raise ValueError("a negative item")
        return [2 * item for item in items]


def wait_until(condition: object, timeout_s: float = 10.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout_s / 0.005)):
        if condition():  # type: ignore[operator]
            return
        done.wait(0.005)
    raise AssertionError("condition never held")


def test_calls_that_arrive_while_a_batch_renders_share_the_next_pass() -> None:
    render = RenderDouble(hold_first=True)
    batcher = MicroBatcher[int, int](render, size=lambda item: 10, max_batch=8)
    with ThreadPoolExecutor(max_workers=5) as threads:
        first = threads.submit(batcher.submit, 1)
        assert render.entered.wait(10)
        rest = [threads.submit(batcher.submit, item) for item in (2, 3, 4, 5)]
        wait_until(lambda: len(batcher._pending) == 4)
        render.release.set()
        results = [first.result(10), *(future.result(10) for future in rest)]
    assert results == [2, 4, 6, 8, 10]  # each caller gets its own item's result
    assert render.batches[0] == [1]
    assert sorted(render.batches[1]) == [2, 3, 4, 5]  # one pass, whoever of them led it
    counts = batcher.counts()
    assert (counts.batches, counts.items, counts.largest, counts.sizes) == (2, 5, 4, {1: 1, 4: 1})


def test_a_leader_waits_for_the_calls_inside_the_engine_that_have_not_submitted_yet() -> None:
    render = RenderDouble()
    batcher = MicroBatcher[int, int](render, size=lambda item: 10, max_batch=8, gather_wait_s=10.0)
    in_prosody = threading.Event()
    go_on = threading.Event()

    def slow_call() -> int:
        with batcher.inside():
            in_prosody.set()
            assert go_on.wait(10)  # its prosody, still running when the leader arrives
            return batcher.submit(2)

    def fast_call() -> int:
        with batcher.inside():
            return batcher.submit(1)

    with ThreadPoolExecutor(max_workers=2) as threads:
        slow = threads.submit(slow_call)
        assert in_prosody.wait(10)
        fast = threads.submit(fast_call)
        wait_until(lambda: batcher._leading)
        assert render.batches == []  # the leader holds its pass for the call on its way
        go_on.set()
        assert (fast.result(10), slow.result(10)) == (2, 4)
    assert render.batches == [[1, 2]]


def test_a_call_alone_in_the_engine_does_not_wait() -> None:
    render = RenderDouble()
    batcher = MicroBatcher[int, int](render, size=lambda item: 10, max_batch=8, gather_wait_s=60.0)
    with batcher.inside():
        assert batcher.submit(3) == 6  # nobody else inside: no gathering wait (the test would hang)
    with batcher.inside():
        pass  # a call that leaves without submitting (its segment had no sound) is no longer expected
    assert batcher.submit(4) == 8
    assert render.batches == [[3], [4]]


def test_a_failing_pass_is_rendered_item_by_item_and_fails_only_its_bad_item() -> None:
    render = RenderDouble(hold_first=True)
    batcher = MicroBatcher[int, int](render, size=lambda item: 10, max_batch=8)
    with ThreadPoolExecutor(max_workers=3) as threads:
        first = threads.submit(batcher.submit, 1)
        assert render.entered.wait(10)
        good, bad = threads.submit(batcher.submit, 2), threads.submit(batcher.submit, -1)
        wait_until(lambda: len(batcher._pending) == 2)
        render.release.set()
        assert first.result(10) == 2 and good.result(10) == 4
        with pytest.raises(ValueError, match="a negative item"):
            bad.result(10)
    assert sorted(map(sorted, render.batches[1:])) == [[-1], [-1, 2], [2]]


def test_counted_pieces_count_as_inside_and_close_what_they_wrap() -> None:
    batcher = MicroBatcher[int, int](RenderDouble(), size=lambda item: 10, max_batch=4)
    closed: list[bool] = []

    def pieces() -> object:
        try:
            yield batcher._expected
            yield batcher._expected
        finally:
            closed.append(True)

    counted = batcher.counted(pieces())  # type: ignore[arg-type]
    assert next(counted) == 1  # inside while its next() runs
    assert batcher._expected == 0  # and no longer once it returned
    counted.close()
    assert closed == [True]


def test_one_lane_renders_each_call_at_once() -> None:
    render = RenderDouble()
    batcher = MicroBatcher[int, int](render, size=lambda item: 10, max_batch=1)
    assert [batcher.submit(item) for item in (1, 2)] == [2, 4]
    assert render.batches == [[1], [2]]
    assert batcher.counts().sizes == {1: 2}


def test_buckets_group_lengths_alike_and_put_the_earliest_arrival_first() -> None:
    assert buckets([40, 42, 41], max_batch=8) == [[0, 1, 2]]
    # A whole segment (300 steps) beside short windows: a pass of its own, not 7x padding on theirs.
    assert buckets([40, 300, 45, 310], max_batch=8) == [[0, 2], [1, 3]]
    assert buckets([300, 40], max_batch=8) == [[0], [1]]  # the first to arrive is rendered first
    assert buckets([10, 10 + BUCKET_SLACK_STEPS], max_batch=8) == [[0, 1]]  # short ones share anyway
    assert buckets([50] * 5, max_batch=2) == [[0, 1], [2, 3], [4]]
