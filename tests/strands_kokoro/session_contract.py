"""The behaviour every :class:`~strands_kokoro.sessions.base.SpeechSession` must show, as a reusable suite.

It runs whole on the WebSocket session and on the SageMaker bidi session (frames split into payload parts,
the more demanding of SageMaker's two part forms); the other sessions (POST /invocations, the SageMaker
batch response stream) have tests of what is theirs in their own modules.

Use it by subclassing in a ``test_*.py`` module and providing two fixtures::

    class TestMySession(SessionContract):
        @pytest.fixture
        def session_factory(self, model_server) -> Callable[[], SpeechSession]:
            return lambda: MySession(...)          # an unopened session to the REAL server

        @pytest.fixture
        def dead_session_factory(self) -> Callable[[], SpeechSession]:
            return lambda: MySession(<nothing listening>)

The suite runs under anyio (asyncio backend). Every test reads ``session.events()`` with one iterator,
the way ``KokoroSpeech``'s receiver does, and every wait is bounded so a broken session fails, not hangs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import ClassVar

import anyio
import pytest

from strands_kokoro.protocol import (
    SAMPLE_WIDTH_BYTES,
    AudioData,
    Cancelled,
    ServerError,
    SessionStarted,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    WordTimings,
    audio_ms,
)
from strands_kokoro.sessions.base import SessionClosedError, SessionEvent, SpeechSession

SessionFactory = Callable[[], SpeechSession]
WAIT_S = 120.0  # bound on any single wait (CPU synthesis on a busy 2-core machine)


async def read_until(
    events: AsyncIterator[SessionEvent], done: Callable[[list[SessionEvent]], bool]
) -> list[SessionEvent]:
    """Collect events until ``done(collected)`` holds (bounded by WAIT_S)."""
    collected: list[SessionEvent] = []
    with anyio.fail_after(WAIT_S):
        while not done(collected):
            collected.append(await anext(events))
    return collected


async def three_cancels(session_factory: SessionFactory) -> tuple[list[int], bytes]:
    """Two requests, three cancels back to back, one more request: what each ``cancelled`` dropped (one
    answer per cancel, never one for all) and the last request's audio (the session went on)."""
    async with session_factory() as session:
        events = session.events()
        for i in range(2):
            await session.send(SynthesizeRequest("It keeps the engine busy. " * 4, request_id=f"q{i}"))
        for _ in range(3):
            await session.cancel()
        got = await read_until(events, lambda c: sum(isinstance(e, Cancelled) for e in c) == 3)
        await session.send(SynthesizeRequest("Back again.", request_id="after"))
        got += await read_until(events, completed("after"))
        await session.close()
    return [e.dropped for e in got if isinstance(e, Cancelled)], audio_of(got, "after")


def completed(*request_ids: str) -> Callable[[list[SessionEvent]], bool]:
    """Done once every id has a SynthesisCompleted or a ServerError."""

    def check(collected: list[SessionEvent]) -> bool:
        ended = {
            e.request_id
            for e in collected
            if isinstance(e, SynthesisCompleted | ServerError) and e.request_id
        }
        return set(request_ids) <= ended

    return check


def audio_of(collected: list[SessionEvent], request_id: str) -> bytes:
    return b"".join(e.pcm for e in collected if isinstance(e, AudioData) and e.request_id == request_id)


class SessionContract:
    """Inherit into a ``Test...`` class and provide ``session_factory`` / ``dead_session_factory``."""

    # A shared 2-core CI box synthesizes slowly; the first test also waits for the server to load.
    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.anyio, pytest.mark.timeout(900)]

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    async def test_one_request_streams_start_audio_complete(self, session_factory: SessionFactory) -> None:
        async with session_factory() as session:
            events = session.events()
            await session.send(SynthesizeRequest("Hello there, this is a test.", request_id="r1"))
            got = await read_until(events, completed("r1"))
            await session.close()
        # A bidirectional server announces itself first (``session_start``); it belongs to no request.
        announced = [e for e in got if isinstance(e, SessionStarted)]
        assert not announced or (got[0] is announced[0] and len(announced) == 1)
        got = [e for e in got if not isinstance(e, SessionStarted)]
        kinds = [type(e) for e in got]
        assert kinds[0] is SynthesisStarted and kinds[-1] is SynthesisCompleted
        assert all(k in (AudioData, WordTimings) for k in kinds[1:-1]) and AudioData in kinds
        pcm = audio_of(got, "r1")
        assert pcm and len(pcm) % SAMPLE_WIDTH_BYTES == 0
        start, done = got[0], got[-1]
        assert isinstance(start, SynthesisStarted) and isinstance(done, SynthesisCompleted)
        assert start.request_id == done.request_id == "r1"
        # The reported duration is the audio that actually arrived (within one sample's rounding).
        assert abs(done.audio_ms - audio_ms(len(pcm), start.sample_rate)) < 1.0
        assert done.chunks >= 1
        # Word timings, where the transport relays them, are the request's words, each sent once.
        timed = [w for e in got if isinstance(e, WordTimings) for w in e.words]
        assert not timed or timed == list(done.words)

    async def test_requests_complete_in_the_order_sent(self, session_factory: SessionFactory) -> None:
        texts = ["First one.", "The second sentence is a little longer.", "Third."]
        async with session_factory() as session:
            events = session.events()
            for i, text in enumerate(texts):
                await session.send(SynthesizeRequest(text, request_id=f"r{i}"))
            got = await read_until(events, completed("r0", "r1", "r2"))
            await session.close()
        order = [e.request_id for e in got if isinstance(e, SynthesisCompleted)]
        assert order == ["r0", "r1", "r2"]
        # Audio frames sit between their own request's start and complete.
        current = None
        for event in got:
            if isinstance(event, SynthesisStarted):
                current = event.request_id
            elif isinstance(event, AudioData):
                assert event.request_id == current
            elif isinstance(event, SynthesisCompleted):
                assert event.request_id == current
                current = None
        assert all(audio_of(got, f"r{i}") for i in range(3))

    async def test_bad_request_gets_a_coded_error_and_the_session_goes_on(
        self, session_factory: SessionFactory
    ) -> None:
        async with session_factory() as session:
            events = session.events()
            await session.send(SynthesizeRequest("Hello.", request_id="bad", voice="no_such_voice"))
            await session.send(SynthesizeRequest("Still here.", request_id="good"))
            got = await read_until(events, completed("bad", "good"))
            await session.close()
        errors = [e for e in got if isinstance(e, ServerError)]
        assert [(e.request_id, e.code) for e in errors] == [("bad", "unknown_voice")]
        assert errors[0].message  # written for humans, never empty
        assert not audio_of(got, "bad")
        assert audio_of(got, "good")

    async def test_sample_rate_and_speed_are_honoured(self, session_factory: SessionFactory) -> None:
        text = "Speed changes the length of the audio."
        async with session_factory() as session:
            events = session.events()
            await session.send(SynthesizeRequest(text, request_id="normal", sample_rate=16_000))
            await session.send(SynthesizeRequest(text, request_id="fast", speed=2.0, sample_rate=16_000))
            got = await read_until(events, completed("normal", "fast"))
            await session.close()
        starts = {e.request_id: e for e in got if isinstance(e, SynthesisStarted)}
        assert starts["normal"].sample_rate == starts["fast"].sample_rate == 16_000
        normal, fast = audio_of(got, "normal"), audio_of(got, "fast")
        assert 0 < len(fast) < 0.8 * len(normal)

    async def test_cancel_drops_queued_requests_and_the_session_goes_on(
        self, session_factory: SessionFactory
    ) -> None:
        # Many short sentences: the request in flight is cut between them (a segment each), so the
        # cancel is answered after one short segment rather than a long one.
        long_text = "It keeps the engine busy. " * 8
        async with session_factory() as session:
            events = session.events()
            for i in range(3):
                await session.send(SynthesizeRequest(long_text, request_id=f"q{i}"))
            got = await read_until(events, lambda c: any(isinstance(e, AudioData) for e in c))
            await session.cancel()
            got += await read_until(events, lambda c: any(isinstance(e, Cancelled) for e in c))
            await session.send(SynthesizeRequest("Back again.", request_id="after"))
            got += await read_until(events, completed("after"))
            await session.close()
        cancelled = [e for e in got if isinstance(e, Cancelled)]
        assert len(cancelled) == 1 and cancelled[0].dropped >= 1
        done = [e.request_id for e in got if isinstance(e, SynthesisCompleted)]
        assert "q2" not in done  # queued behind the one in flight: dropped, never synthesized
        assert done[-1] == "after" and audio_of(got, "after")

    async def test_every_cancel_gets_its_own_answer_in_order(self, session_factory: SessionFactory) -> None:
        dropped, after = await three_cancels(session_factory)
        assert len(dropped) == 3 and dropped[0] >= 1 and dropped[1:] == [0, 0], dropped
        assert after

    async def test_close_ends_the_event_stream_without_error(self, session_factory: SessionFactory) -> None:
        async with session_factory() as session:
            events = session.events()
            await session.send(SynthesizeRequest("Short.", request_id="r1"))
            await read_until(events, completed("r1"))
            await session.close()
            with anyio.fail_after(WAIT_S):
                rest = [event async for event in events]
        assert not any(isinstance(e, AudioData) for e in rest)

    async def test_unreachable_endpoint_raises_session_closed(
        self, dead_session_factory: SessionFactory
    ) -> None:
        with anyio.fail_after(WAIT_S), pytest.raises(SessionClosedError):
            async with dead_session_factory() as session:
                events = session.events()
                await session.send(SynthesizeRequest("Nobody is listening.", request_id="r1"))
                await anext(events)
