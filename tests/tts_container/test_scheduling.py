"""The engine's scheduling and the admission arithmetic, on a simulated clock (deterministic).

The pool's order is checked with real engine-thread calls held behind an event (no timing): whoever
is due first runs first. The listener clock and the admission take a clock the test moves by hand.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from strands_kokoro.protocol import ErrorCode
from tts_container.engines.base import call_lanes
from tts_container.scheduling.admission import Admission
from tts_container.scheduling.capacity import WHOLE_SEGMENT_SHARE, Capacity, full_at, listener_share
from tts_container.scheduling.inference import IDLE, CallShare, InferencePool
from tts_container.scheduling.listener import ANSWER_GAP_S, FIRST_AUDIO_TARGET_S, ListenerClock

pytestmark = pytest.mark.anyio


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def _hold_engine(pool: InferencePool) -> tuple[threading.Event, asyncio.Task[None]]:
    """Occupy the engine thread until the returned event is set (so later calls queue up)."""
    entered, release = threading.Event(), threading.Event()

    def block() -> None:
        entered.set()
        release.wait(10)

    task = asyncio.create_task(pool.run(block))
    await asyncio.to_thread(entered.wait, 10)
    return release, task


async def test_the_earliest_deadline_runs_first_and_ties_keep_arrival_order() -> None:
    pool = InferencePool()
    order: list[str] = []
    release, holder = await _hold_engine(pool)
    calls = [
        asyncio.create_task(pool.run(lambda name=name: order.append(name), deadline=deadline))
        for name, deadline in [
            ("late", 30.0),
            ("idle", IDLE),
            ("soon", 10.0),
            ("tie-a", 20.0),
            ("tie-b", 20.0),
        ]
    ]
    await asyncio.sleep(0.01)
    assert pool.stats().queued == 5
    release.set()
    await asyncio.gather(holder, *calls)
    assert order == ["soon", "tie-a", "tie-b", "late", "idle"]
    stats = pool.stats()
    assert (stats.queued, stats.running, stats.completed) == (0, 0, 6)
    pool.shutdown()


async def test_a_newcomer_goes_before_a_listener_far_ahead_and_after_one_about_to_run_dry() -> None:
    clock = ManualClock()
    far_ahead, about_dry, newcomer = ListenerClock(clock), ListenerClock(clock), ListenerClock(clock)
    far_ahead.made(6.0, clock.now - 1, started=False)  # six seconds buffered
    about_dry.made(0.08, clock.now - 1, started=False)  # 80 ms left
    pool = InferencePool()
    order: list[str] = []
    release, holder = await _hold_engine(pool)
    due = {
        "far_ahead": far_ahead.deadline(clock.now - 1, started=True),
        "newcomer": newcomer.deadline(clock.now, started=False),
        "about_dry": about_dry.deadline(clock.now - 1, started=True),
    }
    calls = [
        asyncio.create_task(pool.run(lambda name=name: order.append(name), deadline=deadline))
        for name, deadline in due.items()
    ]
    await asyncio.sleep(0.01)
    release.set()
    await asyncio.gather(holder, *calls)
    assert order == ["about_dry", "newcomer", "far_ahead"]
    assert due["newcomer"] == pytest.approx(clock.now + FIRST_AUDIO_TARGET_S)
    pool.shutdown()


async def test_a_waiting_call_cancelled_never_runs_and_a_running_one_is_waited_for() -> None:
    pool = InferencePool()
    ran: list[str] = []
    release, holder = await _hold_engine(pool)
    waiting = asyncio.create_task(pool.run(lambda: ran.append("withdrawn")))
    await asyncio.sleep(0.01)
    waiting.cancel()
    holder.cancel()  # already running: the cancellation waits for the call to end
    await asyncio.sleep(0.01)
    assert not holder.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await holder
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await pool.run(lambda: ran.append("next"))
    assert ran == ["next"]
    assert pool.stats().queued == 0
    pool.shutdown()


async def test_an_engine_failure_reaches_its_caller_and_the_pool_goes_on() -> None:
    pool = InferencePool()

    def fail() -> None:
        raise RuntimeError("engine fault")

    with pytest.raises(RuntimeError, match="engine fault"):
        await pool.run(fail)
    assert await pool.run(lambda: 7) == 7
    pool.shutdown()


async def _blocked_calls(
    pool: InferencePool, deadlines: dict[str, float]
) -> tuple[dict[str, threading.Event], dict[str, threading.Event], dict[str, int], list[asyncio.Task[None]]]:
    """One call per name, each held on the engine until its release is set; what ``call_lanes`` each
    saw is recorded when it starts."""
    entered = {name: threading.Event() for name in deadlines}
    release = {name: threading.Event() for name in deadlines}
    lanes: dict[str, int] = {}

    def call(name: str) -> None:
        lanes[name] = call_lanes.get()
        entered[name].set()
        release[name].wait(10)

    tasks = [
        asyncio.create_task(pool.run(lambda name=name: call(name), deadline=deadline))
        for name, deadline in deadlines.items()
    ]
    return entered, release, lanes, tasks


async def test_two_waiting_calls_run_side_by_side_on_an_engine_with_two_lanes() -> None:
    pool = InferencePool()
    pool.lanes = 2
    release_holder, holder = await _hold_engine(pool)  # alone: every core
    entered, release, lanes, tasks = await _blocked_calls(pool, {"a": 1.0, "b": 2.0, "c": 3.0})
    await asyncio.sleep(0.01)
    assert pool.stats().running == 1  # nobody starts beside a call that has every core
    release_holder.set()
    await holder
    await asyncio.to_thread(entered["b"].wait, 10)
    assert entered["a"].is_set() and not entered["c"].is_set()
    assert lanes == {"a": 2, "b": 2} and pool.stats().running == 2
    release["a"].set()  # a lane frees: the next call takes it, still on half the cores
    await asyncio.to_thread(entered["c"].wait, 10)
    assert lanes["c"] == 2
    release["b"].set()
    release["c"].set()
    await asyncio.gather(*tasks)
    assert pool.stats().running == 0
    pool.shutdown()


async def test_a_call_alone_has_every_core_and_idle_work_never_shares_the_engine() -> None:
    pool = InferencePool()
    pool.lanes = 2
    entered, release, lanes, tasks = await _blocked_calls(pool, {"alone": 1.0})
    await asyncio.to_thread(entered["alone"].wait, 10)
    assert lanes == {"alone": 1}
    calibration, release_calibration, idle_lanes, idle_tasks = await _blocked_calls(pool, {"fit": IDLE})
    listener, release_listener, listener_lanes, listener_tasks = await _blocked_calls(pool, {"next": 5.0})
    await asyncio.sleep(0.01)
    assert pool.stats().running == 1
    release["alone"].set()  # one listener's call and idle work wait: the call runs alone, then the work
    await asyncio.to_thread(listener["next"].wait, 10)
    await asyncio.sleep(0.01)
    assert listener_lanes == {"next": 1} and not calibration["fit"].is_set()
    release_listener["next"].set()
    await asyncio.to_thread(calibration["fit"].wait, 10)
    assert idle_lanes == {"fit": 1}
    release_calibration["fit"].set()
    await asyncio.gather(*tasks, *idle_tasks, *listener_tasks)
    pool.shutdown()


async def test_the_busy_time_counts_the_engine_once_while_two_calls_share_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock()
    monkeypatch.setattr("tts_container.scheduling.inference.time.perf_counter", clock)
    pool = InferencePool()
    pool.lanes = 2
    release_holder, holder = await _hold_engine(pool)  # busy from 100
    entered, release, _, tasks = await _blocked_calls(pool, {"a": 1.0, "b": 1.0})
    clock.now = 101.0
    release_holder.set()
    await holder
    await asyncio.to_thread(entered["b"].wait, 10)  # both started at 101
    clock.now = 103.0
    release["a"].set()
    release["b"].set()
    await asyncio.gather(*tasks)
    # The engine was busy 100-103: the two calls side by side count once, not twice.
    assert pool.stats().busy_s == pytest.approx(3.0)
    pool.shutdown()


async def test_each_call_costs_its_share_of_the_engine_s_busy_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls batched together share the engine's time: four calls running for 2 s cost 0.5 s each, and
    one that ran a further second alone costs that second whole."""
    clock = ManualClock()
    monkeypatch.setattr("tts_container.scheduling.inference.time.perf_counter", clock)
    pool = InferencePool()
    pool.lanes = 4
    release_holder, holder = await _hold_engine(pool)
    names = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}
    entered, release = {n: threading.Event() for n in names}, {n: threading.Event() for n in names}

    def call(name: str) -> str:
        entered[name].set()
        release[name].wait(10)
        return name

    tasks = {
        name: asyncio.create_task(pool.run_measured(lambda name=name: call(name), deadline=deadline))
        for name, deadline in names.items()
    }
    release_holder.set()
    await holder
    for name in names:
        await asyncio.to_thread(entered[name].wait, 10)  # all four started at 100
    clock.now = 102.0
    for name in "abc":
        release[name].set()
        await asyncio.wait_for(asyncio.shield(tasks[name]), 10)
    clock.now = 103.0
    release["d"].set()
    shares = {name: await task for name, task in tasks.items()}
    assert shares["a"] == ("a", CallShare(pytest.approx(0.5), lanes=4, peak=4))  # type: ignore[arg-type]
    assert shares["d"] == ("d", CallShare(pytest.approx(1.5), lanes=4, peak=4))  # type: ignore[arg-type]
    pool.shutdown()


def test_an_engine_that_batches_counts_as_full_from_half_a_batch() -> None:
    """A pass of two on an engine that batches 32 says little of what it makes full: left out."""
    assert (full_at(1), full_at(2), full_at(32)) == (2, 2, 16)
    capacity = Capacity(share=1.1, full=full_at(32))
    capacity.record(audio_s=10.0, engine_s=1.0)  # alone: 10 audio s per engine s
    capacity.record(audio_s=1.0, engine_s=0.05, lanes=32, peak=2)  # a batch of two: left out
    assert capacity.audio_per_s == pytest.approx(10.0)
    capacity.record(audio_s=4.0, engine_s=0.05, lanes=32, peak=24)  # a full engine: 80 per second
    assert capacity.audio_per_s == pytest.approx(80.0)
    assert capacity.listeners() == 72


def test_the_listener_clock_counts_stalls_only_inside_speech() -> None:
    clock = ManualClock()
    listener = ListenerClock(clock)
    received = clock.now
    clock.now += 0.25
    first = listener.made(0.4, received, started=False)
    assert first.first_audio_s == pytest.approx(0.25) and first.stall_s == 0
    assert listener.dry_at == pytest.approx(clock.now + 0.4)
    clock.now += 0.3  # the next window comes 100 ms before the buffer runs dry
    assert listener.made(0.6, received, started=True).stall_s == 0
    assert listener.dry_at == pytest.approx(clock.now + 0.1 + 0.6)
    clock.now += 0.9  # 200 ms late
    assert listener.made(0.5, received, started=True).stall_s == pytest.approx(0.2)
    # A request sent while that audio plays continues it: due when it runs out, a stall if later.
    next_received = clock.now
    assert listener.deadline(next_received, started=False) == pytest.approx(clock.now + 0.5)
    clock.now += 0.7
    assert listener.made(1.0, next_received, started=False).stall_s == pytest.approx(0.2)
    # After the listener went quiet, a request starts a new stretch: first audio, no stall.
    clock.now += 5.0
    later = clock.now
    assert listener.deadline(later, started=False) == pytest.approx(later + FIRST_AUDIO_TARGET_S)
    clock.now += 0.3
    heard = listener.made(1.0, later, started=False)
    assert heard.stall_s == 0 and heard.first_audio_s == pytest.approx(0.3)
    assert listener.stalled_s == pytest.approx(0.4)


def test_after_a_barge_in_the_listener_holds_no_place_and_its_next_request_is_due_soon() -> None:
    clock = ManualClock()
    admission = _admission(clock, audio_per_s=1.5)  # one listener
    listener, next_turn = admission.listener(), admission.listener()
    assert admission.admit(listener, "a", "a") is None
    listener.made(6.0, clock.now, started=False)  # six seconds queued for the listener
    listener.requests.clear()
    listener.stop()  # cancel: the queued audio is dropped
    assert not listener.in_answer() and admission.speaking() == 0
    clock.now += 0.1
    assert listener.deadline(clock.now, started=False) == pytest.approx(clock.now + FIRST_AUDIO_TARGET_S)
    assert admission.admit(next_turn, "b", "b") is None  # the user's next turn, on a new session


def test_capacity_follows_the_engine_and_forgets_the_warm_up() -> None:
    capacity = Capacity()
    capacity.record(audio_s=4.0, engine_s=2.0)  # the warm-up: two audio seconds per engine second
    assert capacity.audio_per_s == pytest.approx(2.0)
    assert capacity.listeners() == int(2.0 / WHOLE_SEGMENT_SHARE)
    for _ in range(200):  # the engine turns out faster: four audio seconds per engine second
        capacity.record(audio_s=1.0, engine_s=0.25)
    assert capacity.audio_per_s == pytest.approx(4.0, rel=0.05)
    assert capacity.listeners() == 3
    assert Capacity().listeners() == 1  # nothing measured: one listener is always served
    slow = Capacity()
    slow.record(audio_s=1.0, engine_s=5.0)
    assert slow.listeners() == 1  # slower than real time: still one


def test_a_listener_of_a_windowed_engine_needs_the_windows_growth() -> None:
    """Each window is WINDOW_GROWTH times the one before and must be ready before that one has played."""
    windowed, whole = Capacity(share=listener_share(True)), Capacity(share=listener_share(False))
    for capacity in (windowed, whole):
        capacity.record(audio_s=3.3, engine_s=1.0)
    assert listener_share(True) == 1.5 and listener_share(False) == WHOLE_SEGMENT_SHARE
    assert windowed.listeners() == 2  # 3.3 audio s per s: two listeners at 1.65 each
    assert whole.listeners() == 3


def test_capacity_counts_calls_side_by_side_and_follows_the_machine_through_calls_alone() -> None:
    """The warm-up measures both; one listener at a time then refreshes only the calls alone."""
    capacity = Capacity(share=1.5)
    capacity.record(audio_s=2.7, engine_s=1.0)  # alone on every core
    assert capacity.listeners() == 1  # 2.7 / 1.5
    capacity.record(audio_s=1.65, engine_s=0.5, lanes=2)  # two calls side by side: 3.3 per second
    capacity.record(audio_s=1.65, engine_s=0.5, lanes=2)
    assert capacity.audio_per_s == pytest.approx(3.3)
    assert capacity.listeners() == 2
    for _ in range(400):  # a noisy neighbour: calls alone now make 2.0 per second
        capacity.record(audio_s=0.5, engine_s=0.25)
    assert capacity.audio_per_s == pytest.approx(3.3 * 2.0 / 2.7, rel=0.02)
    assert capacity.listeners() == 1
    for _ in range(400):  # it left: the second listener is admitted again, never measured side by side
        capacity.record(audio_s=0.675, engine_s=0.25)
    assert capacity.audio_per_s == pytest.approx(3.3, rel=0.02)
    assert capacity.listeners() == 2


def _admission(clock: ManualClock, audio_per_s: float) -> Admission:
    capacity = Capacity()
    capacity.record(audio_s=audio_per_s, engine_s=1.0)
    return Admission(capacity, clock)


def test_a_new_answer_past_capacity_is_refused_with_when_to_retry() -> None:
    clock = ManualClock()
    admission = _admission(clock, audio_per_s=2.5)  # x 0.9: two listeners
    first, second, third = admission.listener(), admission.listener(), admission.listener()
    assert admission.admit(first, "r1", "r1") is None
    first.made(3.0, clock.now, started=False)
    assert admission.admit(second, "r2", "r2") is None
    second.made(1.0, clock.now, started=False)
    refused = admission.admit(third, "r3", "r3")
    assert refused is not None and refused.code == ErrorCode.OVERLOADED
    assert refused.request_id == "r3"
    # The soonest place: the second listener's audio runs out in 1 s, then its answer's gap passes.
    assert refused.retry_after_ms == round((1.0 + ANSWER_GAP_S) * 1000)
    assert (admission.admitted, admission.refused) == (2, 1)
    assert "r3" not in third.requests


def test_the_next_sentence_of_an_admitted_answer_is_never_refused() -> None:
    clock = ManualClock()
    admission = _admission(clock, audio_per_s=1.5)  # one listener
    speaking, other = admission.listener(), admission.listener()
    assert admission.admit(speaking, "s1", "s1") is None
    speaking.made(2.0, clock.now, started=False)
    speaking.requests.discard("s1")  # its first sentence ended; its audio still plays
    assert admission.admit(other, "o1", "o1") is not None  # full
    clock.now += 2.0 + ANSWER_GAP_S / 2  # played out, but the agent is still writing the next sentence
    assert admission.admit(speaking, "s2", "s2") is None
    speaking.requests.discard("s2")
    clock.now += ANSWER_GAP_S * 2  # the answer is over: its next request is a new answer
    assert admission.speaking() == 0
    assert admission.admit(other, "o2", "o2") is None
    assert admission.admit(speaking, "s3", "s3") is not None


def test_a_listener_that_leaves_frees_its_place() -> None:
    clock = ManualClock()
    admission = _admission(clock, audio_per_s=1.5)
    gone, waiting = admission.listener(), admission.listener()
    assert admission.admit(gone, "g", "g") is None
    assert admission.admit(waiting, "w", "w") is not None
    admission.leave(gone)
    assert admission.admit(waiting, "w", "w") is None
