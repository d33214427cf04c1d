"""One spoken agent turn, and the one object that coordinates it: :class:`SpeechTurn`.

The turn owns the clock, its speech state, the request ledger, the pacer and the events. Its text side
(the mode, :mod:`strands_kokoro.turn.modes`) makes requests; its audio side
(:mod:`strands_kokoro.turn.session`) sends them and reports back (``TurnReports``); the two do not import
each other. Three tasks run in one task group (the agent, the mode's pacing loop, the receiver); the
loop wakes only by :meth:`SpeechTurn.wake` or the mode's next due time. Speech never ends the text
answer: whatever goes wrong with it becomes one ``speech_error`` (:meth:`SpeechTurn.stop`) and the agent
goes on. Why this shape: architecture §9, "The turn".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from strands_kokoro.audio_encoding import new_encoder
from strands_kokoro.errors import TurnErrorCode
from strands_kokoro.events import Event, agent_end, agent_start, error, speech_error, speech_interrupted
from strands_kokoro.pacing.pacer import SpeechPacer
from strands_kokoro.protocol import Word, audio_ms
from strands_kokoro.speech_options import SpeechOptions
from strands_kokoro.turn.endpoint_rotation import EndpointCursor
from strands_kokoro.turn.modes import ModelCall, turn_mode
from strands_kokoro.turn.output import TurnOutput
from strands_kokoro.turn.request_ledger import AudioReply, CompletedReply, Reply, RequestLedger, TurnRequest
from strands_kokoro.turn.session import TurnSession
from strands_kokoro.turn.speech_state import INTERRUPTED, SpeechState

logger = logging.getLogger(__name__)

FLUSH_WAIT_S = 5.0  # a tool waits at most this long for the text before it to reach the session


class SpeechTurn:
    """The one owner of a turn: its clock, speech state, ledger, pacer and events, its mode, its audio
    side and the agent, in one task group; ``outbox`` is the ordered event queue (``None`` ends it)."""

    def __init__(self, *, request_id: str, options: SpeechOptions, endpoints: EndpointCursor) -> None:
        self.request_id = request_id
        self.options = options
        self.outbox: asyncio.Queue[Event | None] = asyncio.Queue()
        self.result: Any = None
        self.speech = SpeechState.SPEAKING
        self._started = time.perf_counter()
        self._pacer = SpeechPacer()
        encoder = new_encoder(options.audio_format, options.sample_rate)
        self._output = TurnOutput(self.outbox, self.now_ms, encoder=encoder)
        self.ledger = RequestLedger(request_id, options, self._release)
        self._session = TurnSession(self, endpoints)
        self._mode = turn_mode(self, options, self._pacer, self._session)
        self._woken = asyncio.Event()
        self._writing = True  # the agent may write more
        self._input_done = False  # the pacing loop has handed over everything it will
        self._last_call: ModelCall | None = None
        self._tasks: asyncio.TaskGroup | None = None
        self._loop = asyncio.get_running_loop()

    def now_ms(self) -> float:
        return (time.perf_counter() - self._started) * 1000.0

    @property
    def speaking(self) -> bool:
        return self.speech is SpeechState.SPEAKING

    @property
    def writing(self) -> bool:
        """May the agent write more?"""
        return self._writing

    def finished(self) -> bool:
        """Is the turn owed nothing more (all its text handed over, every request settled)?"""
        return self._input_done and not self.ledger.pending

    def stop(self, reason: str, message: str = "") -> None:
        """Speech ends for the rest of the turn, the text goes on: every request still owed and the text
        not yet sent are dropped, and one event says why (``speech_interrupted`` when ``reason`` is
        :data:`~strands_kokoro.turn.speech_state.INTERRUPTED`, else a ``speech_error`` with that code)."""
        self.speech = SpeechState.INTERRUPTED if reason == INTERRUPTED else SpeechState.FAILED
        dropped = self.ledger.clear()
        self._mode.drop()
        self.wake()
        if reason == INTERRUPTED:
            self._output.emit(speech_interrupted(dropped, self.now_ms()))
        else:
            self._output.emit(speech_error(reason, message))

    # --------------------------------------------------------------- the text side (the agent task)

    def on_text(self, text: str) -> None:
        """A text delta from the model: shown now, spoken as the turn's mode decides."""
        self._output.text(text)
        self._mode.write(text)
        self.wake()

    def end_segment(self) -> None:
        """The model call ended (maybe before a tool call): its last sentence is complete."""
        self._last_call = call = ModelCall()
        if self._input_done:
            call.on_the_wire.set()  # the pacing loop is over: nothing of it waits
        else:
            self._mode.end_call(call)

    async def wait_flushed(self) -> None:
        """Hand the text of the last model call to the session now and wait until it is (before tools)."""
        call = self._last_call
        if call is not None:
            call.awaited = True
            self.wake()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(call.on_the_wire.wait(), FLUSH_WAIT_S)

    def tool_started(self, tool_use_id: str) -> None:
        """A tool runs now (the text before it was handed over): the mode may say a filler if it runs long."""
        if self._tasks is not None:
            self._mode.tool_started(tool_use_id)

    def tool_finished(self, tool_use_id: str) -> None:
        self._mode.tool_finished(tool_use_id)
        self.wake()

    # ------------------------------------------------------------- what the audio side reports

    def session_started(self, first_audio_ms: float | None, rtf: float | None) -> None:
        self._pacer.speed.advertised(first_audio_ms, rtf)

    def on_the_wire(self) -> None:
        self.wake()

    def request_completed(
        self, request: TurnRequest, words: tuple[Word, ...], first_audio_ms: float | None
    ) -> None:
        """The request was spoken whole: measure the engine on it, release its last reply."""
        self._pacer.completed(
            chars=len(request.text) if request.answer else 0,
            audio_ms=request.received_ms,
            first_audio_ms=first_audio_ms,
            sent_at=request.sent_at,
            now=self.now_ms(),
        )
        self.request_failed(request, CompletedReply(words))

    def request_failed(self, request: TurnRequest, reply: Reply | None) -> None:
        """The request owes nothing more: later requests' events go out, and the pacing looks again."""
        self.ledger.finish(request, reply)
        self.wake()

    def notice(self, code: str, message: str) -> None:
        self._output.notice(code, message)

    def _release(self, request: TurnRequest, reply: Reply) -> None:
        """The ledger releases a reply (request order): audio is told to the pacer's listener clock."""
        if isinstance(reply, AudioReply):
            now, ms = self.now_ms(), audio_ms(len(reply.pcm), request.sample_rate)
            self.ledger.heard(request, now, self._pacer.audio(ms, now))
            self._output.audio(request, reply.pcm, ms, now)
        else:
            self._output.reply(request, reply)

    # ---------------------------------------------------------------------------------- interrupt

    def interrupt(self) -> None:
        """Barge-in: stop speaking now, drop every unspoken request; the text goes on (thread-safe)."""
        try:
            same_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            same_loop = False
        if same_loop:
            self._interrupt()
        else:
            self._loop.call_soon_threadsafe(self._interrupt)

    def _interrupt(self) -> None:
        if self.speech is SpeechState.INTERRUPTED or self._tasks is None:
            return
        self.stop(INTERRUPTED)
        with contextlib.suppress(RuntimeError):  # the group is already finishing: nothing in flight
            self._tasks.create_task(self._session.cancel(), name="kokoro-cancel")

    # ------------------------------------------------------------------------------------ the run

    async def run(self, agent_stream: AsyncIterator[Any]) -> None:
        """Drive the turn to its end; always finishes with ``agent_end`` and the ``None`` sentinel."""
        output = self._output
        output.emit(agent_start(self.request_id, self.options.mode))
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = self._session.tasks = tasks
                tasks.create_task(self._drive(agent_stream), name="kokoro-agent")
                tasks.create_task(self._pace(), name="kokoro-pacing")
                tasks.create_task(self._session.run(), name="kokoro-receiver")
        finally:
            self._tasks = self._session.tasks = None
            output.end_audio(self.options.sample_rate)
            output.emit(
                agent_end(
                    self.request_id,
                    self.options.mode,
                    first_text_ms=output.first_text_ms,
                    first_audio_ms=output.first_audio_ms,
                    total_ms=self.now_ms(),
                    audio_ms=output.audio_ms,
                    chunks=output.audio_seq,
                    requests=self.ledger.count,
                    rtf=self._pacer.speed.rtf,
                    stall_ms=self._pacer.stall_ms,
                )
            )
            output.emit(None)

    async def _drive(self, agent_stream: AsyncIterator[Any]) -> None:
        try:
            async for event in agent_stream:
                if isinstance(event, dict) and "result" in event:
                    self.result = event["result"]
        except Exception as exc:
            # Never str(exc) in the event: it can carry internals (or a bare key) that look like a message.
            # The log says what failed in one line (a missing credential is not a bug: no traceback at the
            # default level); the traceback is there for whoever turns DEBUG on.
            logger.warning("agent turn %s failed: %s: %s", self.request_id, type(exc).__name__, exc)
            logger.debug("agent turn %s failed", self.request_id, exc_info=True)
            self._output.emit(
                error(TurnErrorCode.AGENT_FAILED, f"the agent turn failed ({type(exc).__name__})")
            )
        finally:
            self._writing = False
            self._mode.agent_done()
            self.wake()
            if (aclose := getattr(agent_stream, "aclose", None)) is not None:
                await aclose()

    # ---------------------------------------------------------------------------- the pacing loop

    def wake(self) -> None:
        """Something the pacing loop decides on changed: it looks again (once per burst of changes)."""
        self._woken.set()

    async def wait(self) -> None:
        """Until woken, or until the mode's next due time."""
        due = self._mode.next_due_ms()
        timeout = None if due is None else max(0.0, (due - self.now_ms()) / 1000)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._woken.wait()
        self._woken.clear()

    async def _pace(self) -> None:
        try:
            await self._mode.pace()
        finally:
            self._input_done = True
            await self._session.close_if_finished()
