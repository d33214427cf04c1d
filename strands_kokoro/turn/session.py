"""The audio side of a spoken turn: the connection to the model server, and what comes back on it.

It opens the session, sends every request in order, hands the server's frames to the ledger and reports
the rest to the turn (:class:`TurnReports`); when the connection drops and the error is ``retryable`` it
reopens and sends again what was not fully spoken. A request refused ``overloaded`` goes again after
:mod:`strands_kokoro.turn.overload_retry`'s wait: at the start of an answer on a new session where
:mod:`strands_kokoro.turn.endpoint_rotation` has one, mid-answer on the same session so no sentence is cut.
Speech never ends the text answer: every failure becomes a coded ``speech_error`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Protocol

from strands_kokoro.errors import SETUP_FAILURES, CodedError, TurnErrorCode
from strands_kokoro.protocol import (
    SETTING_REFUSALS,
    AudioData,
    ErrorCode,
    ServerError,
    SessionStarted,
    SynthesisCompleted,
    SynthesisStarted,
    Word,
    WordTimings,
)
from strands_kokoro.sessions.base import SessionClosedError, SessionEvent, SpeechSession
from strands_kokoro.speech_options import SpeechOptions
from strands_kokoro.turn.endpoint_rotation import EndpointCursor
from strands_kokoro.turn.overload_retry import OverloadRetry
from strands_kokoro.turn.request_ledger import FailedReply, Reply, RequestLedger, TurnRequest
from strands_kokoro.turn.speech_state import SpeechState

logger = logging.getLogger(__name__)


class TurnReports(Protocol):
    """What the audio side reads of the turn that owns it, and what it reports to it."""

    request_id: str
    options: SpeechOptions
    ledger: RequestLedger
    speech: SpeechState

    def now_ms(self) -> float: ...

    def finished(self) -> bool:
        """Is the turn owed nothing more (all its text handed over, every request settled)?"""

    def stop(self, reason: str, message: str = "") -> None:
        """Speech ends for the rest of the turn; one event says why."""

    def session_started(self, first_audio_ms: float | None, rtf: float | None) -> None:
        """A session opened and said how fast its server speaks."""

    def on_the_wire(self) -> None:
        """A session opened and every request owed went out on it."""

    def request_completed(
        self, request: TurnRequest, words: tuple[Word, ...], first_audio_ms: float | None
    ) -> None:
        """The request was spoken whole (already settled in the ledger)."""

    def request_failed(self, request: TurnRequest, reply: Reply | None) -> None:
        """The request owes nothing more (already settled): ``reply`` says why, ``None`` nothing."""

    def notice(self, code: str, message: str) -> None:
        """A server error about no request of the turn's."""


class TurnSession:
    """The turn's one connection at a time (``generation`` counts them) and its receiving loop."""

    def __init__(self, state: TurnReports, endpoints: EndpointCursor) -> None:
        self._state = state
        self._endpoints = endpoints
        self._session: SpeechSession | None = None
        self._generation = 0
        self._lock = asyncio.Lock()  # sends go out in order; a reconnect's re-sends are not interleaved
        self.tasks: asyncio.TaskGroup | None = None  # the turn's task group (for delayed re-sends)
        o = state.options
        self._retry = OverloadRetry(budget_s=o.overload_retry_s, backoff_s=o.reconnect_backoff_s)
        self._move_after_s: float | None = None  # set: leave this session, open the next after this wait
        self._resend_on: int | None = None  # the connection a re-send of refused requests waits for

    async def send(self, request: TurnRequest) -> None:
        """A request of the ledger's, in order: sent now if a session is open, else as soon as one opens."""
        async with self._lock:
            if self._session is not None:
                with contextlib.suppress(SessionClosedError):  # the receiver sees the drop and re-sends
                    await self._send(self._session, request)

    def all_on_the_wire(self) -> bool:
        """Has every pending request been sent on the open session (not just queued for it)?"""
        if not self._state.ledger.pending:
            return True
        return self._session is not None and not self._state.ledger.unsent(self._generation)

    async def _send(self, session: SpeechSession, request: TurnRequest) -> None:
        await session.send(request.wire)
        self._state.ledger.sent(request, self._generation, self._state.now_ms())

    async def cancel(self) -> None:
        """Barge-in: the server drops what it has queued and stops the request in flight."""
        if self._session is not None:
            with contextlib.suppress(SessionClosedError):
                await self._session.cancel()
        await self.close_if_finished()

    async def close_if_finished(self) -> None:
        session = self._session
        if session is not None and self._state.finished():
            with contextlib.suppress(SessionClosedError):
                await session.close()

    # ------------------------------------------------------------------------------ the receiver

    async def run(self) -> None:
        """Receive until the turn has nothing more to say; reconnect while the errors are retryable."""
        state = self._state
        retries_left = state.options.reconnect_attempts
        ever_connected = False
        while not state.finished():
            opened = False
            try:
                async with self._endpoints.open() as session:
                    opened = True
                    await self._attach(session)
                    ever_connected = True
                    if not state.finished():
                        await self._receive(session)
                    if self._move_after_s is not None:
                        # Moving on: the server drops what it still queued for us (sent again elsewhere).
                        with contextlib.suppress(SessionClosedError):
                            await session.cancel()
                    # Leaving the block closes the session. Never ``close()`` from here: a draining
                    # close waits for the consumer of its events, and the consumer is this task.
                async with self._lock:
                    self._session = None
                if (wait := self._move_after_s) is None:
                    return
                self._move_after_s = None
                await asyncio.sleep(wait)
            except Exception as exc:
                async with self._lock:
                    self._session = None
                if state.finished():
                    return
                retryable = isinstance(exc, CodedError) and exc.retryable
                if retryable and not opened and self._endpoints.advance():
                    continue  # another endpoint of this round is untried: try it at once
                if retryable and retries_left > 0:
                    attempt = state.options.reconnect_attempts - retries_left
                    retries_left -= 1
                    await asyncio.sleep(state.options.reconnect_backoff_s * 2**attempt)
                    continue
                self._give_up(exc, ever_connected)
                return

    async def _receive(self, session: SpeechSession) -> None:
        """Handle the session's events until the turn is owed nothing more."""
        received = session.events()
        try:
            async for event in received:
                if isinstance(event, AudioData):  # the hot path: straight to the ledger, in order
                    self._state.ledger.audio(event.request_id, event.pcm)
                else:
                    self._handle(event)
                if self._state.finished() or self._move_after_s is not None:
                    return
        finally:
            # Close the iterator here, not in a GC finalizer task that outlives the turn.
            if (aclose := getattr(received, "aclose", None)) is not None:
                await aclose()

    async def _attach(self, session: SpeechSession) -> None:
        """A session opened: (re-)send every request not yet fully spoken, in order, then go live."""
        async with self._lock:
            self._generation += 1
            self._resend_on = None  # whatever waited for a re-send goes now, on this session
            for request in self._state.ledger.unsent(self._generation):
                await self._send(session, request)
            self._session = session
        self._state.on_the_wire()  # a tool may be waiting for text that is only now on the wire

    def _give_up(self, exc: Exception, ever_connected: bool) -> None:
        """Speech is over for this turn: say why in words a listener's app can show."""
        state = self._state
        code = exc.code if isinstance(exc, CodedError) else None
        if code in SETUP_FAILURES:
            state.stop(code, f"{SETUP_FAILURES[code]}; the text goes on")
        elif isinstance(exc, SessionClosedError):
            attempts = state.options.reconnect_attempts + 1
            logger.warning("speech for turn %s gave up: %s", state.request_id, exc)
            if ever_connected:
                kind, what = (
                    TurnErrorCode.CONNECTION_LOST,
                    "the speech connection dropped and was not restored",
                )
            else:
                kind, what = TurnErrorCode.SPEECH_UNAVAILABLE, "could not reach the speech endpoint"
            tries = f" after {attempts} tries" if exc.retryable else ""
            # The transport's own code (e.g. SageMaker's ``no_credentials``) says why; never the URL.
            because = f" ({code})" if code and code != TurnErrorCode.CONNECTION_LOST else ""
            state.stop(kind, f"{what}{tries}{because}; the text goes on")
        elif ever_connected:
            # Not a drop (the sessions code those): a fault of this library's own while speaking.
            logger.error("speech for turn %s stopped on a fault", state.request_id, exc_info=True)
            state.stop(ErrorCode.INTERNAL_ERROR, "speech stopped on a fault of its own; the text goes on")
        else:
            # Not a drop: the session cannot be set up at all (bad credentials, a broken transport...).
            logger.warning("speech session for turn %s failed", state.request_id, exc_info=True)
            state.stop(
                TurnErrorCode.SPEECH_SETUP_FAILED, "the speech session could not be set up; the text goes on"
            )

    def _handle(self, event: SessionEvent) -> None:
        state, ledger = self._state, self._state.ledger
        match event:
            case SessionStarted(first_audio_ms=first_audio_ms, rtf=rtf):
                state.session_started(first_audio_ms, rtf)
            case SynthesisStarted(request_id=request_id, sample_rate=rate):
                if ledger.started(request_id, rate) is not None:
                    self._endpoints.served()
            case WordTimings(request_id=request_id, words=words):
                ledger.words(request_id, words)
            case AudioData(request_id=request_id, pcm=pcm):
                ledger.audio(request_id, pcm)
            case SynthesisCompleted(request_id=request_id, words=words, first_audio_ms=first_audio_ms):
                if (request := ledger.settle(request_id)) is not None:
                    state.request_completed(request, words, first_audio_ms)
            case ServerError(request_id=request_id, code=ErrorCode.OVERLOADED, retry_after_ms=after) if (
                refused := ledger.get(request_id)
            ) is not None:
                self._refused(refused, after)
            case ServerError(request_id=request_id, code=code, message=message):
                self._server_error(ledger.settle(request_id), code, message)

    def _server_error(self, request: TurnRequest | None, code: str, message: str) -> None:
        state = self._state
        if state.speech is SpeechState.FAILED:
            pass  # speech already ended for this turn, and its speech_error said why
        elif code in SETTING_REFUSALS and request is not None:
            # Every request of the turn would be refused alike (an unknown voice): say it once.
            state.stop(code, f"{message}; the text goes on")
        elif request is None:
            if state.speech is not SpeechState.INTERRUPTED:
                state.notice(code, message)
        else:
            interrupted = state.speech is SpeechState.INTERRUPTED
            state.request_failed(request, None if interrupted else FailedReply(code, message))

    def _refused(self, request: TurnRequest, retry_after_ms: int | None) -> None:
        """The server is full: send the request again, in its place in the order (whatever the server
        accepted after it waits behind it until it is spoken), on a new session when the refusal is the
        start of an answer and the turn has another endpoint to go to, else on this one after a wait."""
        state = self._state
        state.ledger.refused(request, state.now_ms())
        if self._move_after_s is not None or state.speech is SpeechState.FAILED:
            return  # already leaving this session: every request it owes goes on the next one
        if self._endpoints.moves_on_refusal and not state.ledger.audio_under_way():
            if self._endpoints.advance():
                self._move_after_s = 0.0  # an endpoint of this round is untried: there at once
            elif (wait := self._overload_wait(request, retry_after_ms)) is not None:
                self._move_after_s = wait
            return
        if (wait := self._overload_wait(request, retry_after_ms)) is None or self._resend_on is not None:
            return  # given up, or a re-send already scheduled takes this request along
        if self.tasks is not None:
            with contextlib.suppress(RuntimeError):  # the group is finishing: nothing to re-send to
                self.tasks.create_task(self._resend(wait, self._generation), name="kokoro-resend")
                self._resend_on = self._generation

    def _overload_wait(self, request: TurnRequest, retry_after_ms: int | None) -> float | None:
        """The wait before trying again; ``None`` when it would pass the budget: speech is given up."""
        state = self._state
        first = request.first_refused_at if request.first_refused_at is not None else state.now_ms()
        wait = self._retry.wait_s(
            retry_after_ms=retry_after_ms,
            refusals=request.refusals,
            waited_s=(state.now_ms() - first) / 1000.0,
            draw=random.random(),
        )
        if wait is None:
            servers = "every speech endpoint is" if self._endpoints.size > 1 else "the speech server is"
            budget = state.options.overload_retry_s
            state.stop(
                ErrorCode.OVERLOADED,
                f"{servers} overloaded and did not take the answer within {budget:g} s; the text goes on",
            )
        return wait

    async def _resend(self, wait_s: float, generation: int) -> None:
        """After the wait, send every refused request again on the open session, in order."""
        await asyncio.sleep(wait_s)
        async with self._lock:
            session = self._session
            if self._resend_on != generation or session is None:
                return  # reconnected (and re-sent) meanwhile
            self._resend_on = None
            for request in self._state.ledger.unsent(self._generation):
                with contextlib.suppress(SessionClosedError):  # the receiver sees the drop and re-sends
                    await self._send(session, request)
