"""How a turn's text becomes requests: ``bidi`` speaks while the agent writes, ``batch`` once it is done.

The turn picks its mode once (:func:`turn_mode`), hands it every text delta, model-call end and tool,
and runs its pacing loop (:meth:`TurnMode.pace`). A mode makes the requests in the turn's ledger and
hands them to the audio side to send; it never sees the events. :class:`BidiMode` feeds deltas through
the speech filter and chunker to the pacer, holds a tool until the text before it is on the wire
(:class:`ModelCall`) and says the tool filler; :class:`BatchMode` speaks the whole answer once the agent
is done, in as few requests as the server takes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol, assert_never

from strands_kokoro.pacing.pacer import MAX_IN_FLIGHT_URGENT, SpeechPacer
from strands_kokoro.speech_options import SpeechOptions
from strands_kokoro.text.chunker import IncrementalSentenceChunker
from strands_kokoro.text.speech_text import SpeechTextFilter
from strands_kokoro.turn.batch_text import split_for_request, whole_answer_text
from strands_kokoro.turn.request_ledger import RequestLedger
from strands_kokoro.turn.session import TurnSession

__all__ = ["BatchMode", "BidiMode", "ModelCall", "Turn", "TurnMode", "turn_mode"]


@dataclass(eq=False, slots=True)
class ModelCall:
    """A model call that ended (maybe before a tool call): its last sentence is complete. ``on_the_wire``
    is set once its text was sent on an open session; a tool about to run waits for it (``awaited``),
    which makes the turn hand all of it over at once."""

    on_the_wire: asyncio.Event = field(default_factory=asyncio.Event)
    awaited: bool = False


class Turn(Protocol):
    """What a mode reads of the turn that runs it, and what it asks of it."""

    ledger: RequestLedger

    @property
    def speaking(self) -> bool:
        """Is the turn still speaking (not interrupted, not failed)?"""

    @property
    def writing(self) -> bool:
        """May the agent write more?"""

    def now_ms(self) -> float: ...

    def wake(self) -> None:
        """Something the pacing loop decides on changed: it looks again."""

    async def wait(self) -> None:
        """Until woken, or until the mode's next due time."""


class TurnMode(Protocol):
    """How the turn's text becomes requests; the turn calls each method from its own task group."""

    def write(self, text: str) -> None:
        """A text delta of the model's."""

    def end_call(self, call: ModelCall) -> None:
        """A model call ended: its last sentence is complete; ``call.on_the_wire`` is set once its text
        is on the wire."""

    def agent_done(self) -> None:
        """The agent wrote its last (or failed): its text is complete and its tools are done."""

    def tool_started(self, tool_use_id: str) -> None:
        """A tool runs now (the text before it was handed over)."""

    def tool_finished(self, tool_use_id: str) -> None: ...

    def drop(self) -> None:
        """Speech stopped for the rest of the turn: the text not yet sent is forgotten."""

    def next_due_ms(self) -> float | None:
        """When the pacing loop looks again though nothing woke it (ms of the turn; None: never)."""

    async def pace(self) -> None:
        """The turn's pacing loop: makes and sends the requests until the agent is done and all is sent;
        every model call waiting on it is released when it ends."""


def turn_mode(turn: Turn, options: SpeechOptions, pacer: SpeechPacer, session: TurnSession) -> TurnMode:
    """The mode ``options.mode`` names, for ``turn`` (its pacer, and the audio side that sends)."""
    match options.mode:
        case "bidi":
            return BidiMode(turn, options, pacer, session)
        case "batch":
            return BatchMode(turn, session)
        case unknown:
            assert_never(unknown)


async def _speak(turn: Turn, session: TurnSession, text: str, *, answer: bool = True) -> None:
    """``text`` as one request of the turn, sent (nothing when it is blank or the turn stopped speaking)."""
    if (text := text.strip()) and turn.speaking:
        await session.send(turn.ledger.new(text, answer=answer))


@dataclass(slots=True)
class _Filler:
    """A tool running: the requests made before it, and when its filler is due (once they played)."""

    requests_before: int
    due_at: float | None = None


class BidiMode:
    """Speaks while the agent writes: the pacer's pieces as requests, as it decides; the tool filler."""

    def __init__(self, turn: Turn, options: SpeechOptions, pacer: SpeechPacer, session: TurnSession) -> None:
        self._turn = turn
        self._session = session
        self._options = options
        self._pacer = pacer  # the one writer of the pacer's text
        self._filter = SpeechTextFilter()
        self._chunker = IncrementalSentenceChunker(max_chars=options.max_chars)
        self._calls: list[ModelCall] = []  # model calls whose text is not all on the wire yet
        self._fillers: dict[str, _Filler] = {}

    def write(self, text: str) -> None:
        if self._turn.speaking:
            sentences = self._chunker.feed(self._filter.feed(text))
            self._pacer.write(sentences, self._chunker.pending(), self._turn.now_ms())

    def end_call(self, call: ModelCall) -> None:
        self._flush()
        self._calls.append(call)
        self._turn.wake()

    def agent_done(self) -> None:
        self._flush()  # the tap flushed its last model call already; this is for a failed one
        self._fillers.clear()  # the agent is done: so are its tools

    def _flush(self) -> None:
        if self._turn.speaking:
            sentences = [*self._chunker.feed(self._filter.flush()), *self._chunker.flush()]
            self._pacer.write(sentences, self._chunker.pending(), self._turn.now_ms())

    def tool_started(self, tool_use_id: str) -> None:
        """Say the filler if the tool runs long (one is configured)."""
        if self._options.tool_filler is not None and self._turn.speaking:
            self._fillers[tool_use_id] = _Filler(self._turn.ledger.count)
            self._turn.wake()

    def tool_finished(self, tool_use_id: str) -> None:
        self._fillers.pop(tool_use_id, None)

    def drop(self) -> None:
        self._pacer.drop_all()
        self._fillers.clear()

    def next_due_ms(self) -> float | None:
        """The first filler's due time."""
        due = [f.due_at for f in self._fillers.values() if f.due_at is not None]
        return min(due) if due else None

    async def pace(self) -> None:
        try:
            await self._pace()
        finally:
            for call in self._calls:  # a tool may be waiting on text this loop never sent (it failed)
                call.on_the_wire.set()
            self._calls.clear()

    async def _pace(self) -> None:
        turn, pacer = self._turn, self._pacer
        while turn.writing or pacer.unsent:
            await turn.wait()
            urgent = any(call.awaited for call in self._calls)
            while (
                piece := pacer.next_piece(turn.now_ms(), turn.ledger.in_flight(), urgent=urgent)
            ) is not None:
                if turn.speaking:  # one piece as a request, with the words around it as context
                    request = turn.ledger.new(
                        piece.text,
                        previous=piece.previous_text,
                        following=piece.next_text,
                        predicted_audio_ms=piece.predicted_audio_ms,
                        predicted_buffer_ms=piece.predicted_buffer_ms,
                    )
                    await self._session.send(request)
            await self._fillers_due()
            if not pacer.unsent and self._session.all_on_the_wire():
                for call in self._calls:
                    call.on_the_wire.set()
                self._calls.clear()

    async def _fillers_due(self) -> None:
        """Fillers whose tool runs on after the audio before it played (plus the configured wait)."""
        turn, o = self._turn, self._options
        now = turn.now_ms()
        for tool, filler in list(self._fillers.items()):
            if filler.due_at is None and not turn.ledger.earlier_pending(filler.requests_before):
                silence_from = max(now, self._pacer.play_end_ms or 0.0)
                filler.due_at = silence_from + 1000 * o.tool_filler_after_s
            if filler.due_at is not None and filler.due_at <= now and o.tool_filler is not None:
                del self._fillers[tool]
                await _speak(turn, self._session, o.tool_filler, answer=False)


class BatchMode:
    """The baseline: the whole answer, cleaned, spoken once the agent is done, in as few requests as the
    server takes; no tool filler."""

    def __init__(self, turn: Turn, session: TurnSession) -> None:
        self._turn = turn
        self._session = session
        self._whole: list[str] = []  # the answer so far

    def write(self, text: str) -> None:
        self._whole.append(text)

    def end_call(self, call: ModelCall) -> None:
        call.on_the_wire.set()  # nothing of it waits for the pacing loop

    def agent_done(self) -> None:
        pass

    def tool_started(self, tool_use_id: str) -> None:
        pass

    def tool_finished(self, tool_use_id: str) -> None:
        pass

    def drop(self) -> None:
        pass  # nothing is held before the agent is done; the ledger forgot what was sent

    def next_due_ms(self) -> float | None:
        return None

    async def pace(self) -> None:
        turn = self._turn
        while turn.writing:
            await turn.wait()
        for text in split_for_request(whole_answer_text("".join(self._whole))):
            # Never more in flight than the server queues (it would refuse the rest).
            while len(turn.ledger.pending) >= MAX_IN_FLIGHT_URGENT and turn.speaking:
                await turn.wait()
            await _speak(turn, self._session, text)
