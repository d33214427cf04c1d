"""One spoken agent turn, and the one object that owns it: the agent, the text side and the audio side
in ONE task group.

Why this shape (architecture §5): the model's text must reach the listener as audio while the model is
still writing, and the consumer must see text and audio interleaved in true arrival order. So the turn
runs three tasks over what it owns (:class:`~strands_kokoro.turn_state.TurnState`: options, inbox, the
request ledger, the pacer, the events):

- the agent task drives ``agent.stream_async``; the Strands middleware tap (in ``speech.py``) calls
  :meth:`SpeechTurn.on_text` for every text delta (a ``text_delta`` event + text for the text side) and
  :meth:`SpeechTurn.end_segment` at the end of every model call;
- the text side (:mod:`strands_kokoro.turn_speaker`) turns the text into requests: filter, sentences,
  pacer (``bidi``), or the whole answer at the end (``batch``, the baseline);
- the audio side (:mod:`strands_kokoro.turn_session`) owns the session: it sends the requests, hands
  what comes back to the ledger, and reconnects when the connection drops.

The two sides do not import each other: the turn hands the text side the audio side's ``send``. Each
request's whole life, and the order its events go out in, is the ledger's
(:mod:`strands_kokoro.request_ledger`). Speech never ends the text answer: whatever goes wrong with it
becomes a ``speech_error`` event (:meth:`TurnState.stop`) and the agent goes on writing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from strands_kokoro.endpoint_rotation import EndpointCursor
from strands_kokoro.events import Event, agent_end, agent_start, error
from strands_kokoro.speech_options import SpeechOptions
from strands_kokoro.turn_errors import INTERRUPTED, TurnErrorCode
from strands_kokoro.turn_session import TurnSession
from strands_kokoro.turn_speaker import TurnSpeaker
from strands_kokoro.turn_state import (
    INPUT_ENDED,
    ModelCallEnded,
    SpeechState,
    TextArrived,
    ToolFinished,
    ToolStarted,
    TurnState,
)

logger = logging.getLogger(__name__)

FLUSH_WAIT_S = 5.0  # a tool waits at most this long for the text before it to reach the session


class SpeechTurn:
    """The one owner of a turn: its state, its two sides and the agent, in one task group; ``outbox`` is
    the ordered event queue (``None`` ends it)."""

    def __init__(self, *, request_id: str, options: SpeechOptions, endpoints: EndpointCursor) -> None:
        self.request_id = request_id
        self.options = options
        self.outbox: asyncio.Queue[Event | None] = asyncio.Queue()
        self.result: Any = None
        self._state = TurnState(request_id, options, self.outbox)
        self._session = TurnSession(self._state, endpoints)
        self._speaker = TurnSpeaker(self._state, self._session)
        self._last_call: ModelCallEnded | None = None
        self._tasks: asyncio.TaskGroup | None = None
        self._loop = asyncio.get_running_loop()

    # ------------------------------------------------------------------- called from the agent task

    def on_text(self, text: str) -> None:
        """A text delta from the model: shown now, spoken once the pacer cuts it into a request."""
        self._state.output.text(text)
        self._state.inbox.put_nowait(TextArrived(text))

    def end_segment(self) -> None:
        """The model call ended (maybe before a tool call): its last sentence is complete."""
        self._last_call = ModelCallEnded()
        self._state.inbox.put_nowait(self._last_call)

    async def wait_flushed(self) -> None:
        """Hand the text of the last model call to the session now and wait until it is (before tools)."""
        call = self._last_call
        if call is not None:
            call.awaited = True
            self._state.wake()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(call.on_the_wire.wait(), FLUSH_WAIT_S)

    def tool_started(self, tool_use_id: str) -> None:
        """A tool runs now (the text before it was handed over): say the filler if it runs long."""
        o, state = self.options, self._state
        if o.mode == "bidi" and o.tool_filler is not None and state.speaking and self._tasks is not None:
            state.inbox.put_nowait(ToolStarted(tool_use_id, state.ledger.count))

    def tool_finished(self, tool_use_id: str) -> None:
        self._state.inbox.put_nowait(ToolFinished(tool_use_id))

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
        if self._state.speech is SpeechState.INTERRUPTED or self._tasks is None:
            return
        self._state.stop(INTERRUPTED)
        with contextlib.suppress(RuntimeError):  # the group is already finishing: nothing in flight
            self._tasks.create_task(self._session.cancel(), name="kokoro-cancel")

    # ------------------------------------------------------------------------------------ the run

    async def run(self, agent_stream: AsyncIterator[Any]) -> None:
        """Drive the turn to its end; always finishes with ``agent_end`` and the ``None`` sentinel."""
        state, output = self._state, self._state.output
        output.emit(agent_start(self.request_id, self.options.mode))
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = self._session.tasks = tasks
                tasks.create_task(self._drive(agent_stream), name="kokoro-agent")
                tasks.create_task(self._speaker.run(), name="kokoro-speaker")
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
                    total_ms=state.now_ms(),
                    audio_ms=output.audio_ms,
                    chunks=output.audio_seq,
                    requests=state.ledger.count,
                    rtf=state.pacer.speed.rtf,
                    stall_ms=state.pacer.stall_ms,
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
            self._state.output.emit(
                error(TurnErrorCode.AGENT_FAILED, f"the agent turn failed ({type(exc).__name__})")
            )
        finally:
            self._state.inbox.put_nowait(INPUT_ENDED)  # the tap's last model call end is queued before it
            if (aclose := getattr(agent_stream, "aclose", None)) is not None:
                await aclose()
