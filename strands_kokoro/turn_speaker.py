"""The speaker half of a spoken turn: the model's text → speech filter → chunker → pacer → requests.

``bidi`` filters each text delta for speech, finds its sentences, and lets the
:class:`~strands_kokoro.pacer.SpeechPacer` decide what to send and when; ``batch`` (the baseline, no
pacer) sends the whole answer at the end. While a tool runs it also says the filler: once the audio
before the tool has played and the tool is still running ``tool_filler_after_s`` later.

Everything it reacts to arrives in its inbox (:mod:`strands_kokoro.turn_state`); a filler's due time is
the only timeout it waits with. It makes each request in the turn's ledger and hands it to the audio
side through the :class:`~strands_kokoro.turn_state.RequestSender` the turn gives it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from strands_kokoro.chunker import IncrementalSentenceChunker
from strands_kokoro.pacer import MAX_IN_FLIGHT_URGENT, Piece
from strands_kokoro.protocol import MAX_TEXT_CHARS
from strands_kokoro.sentence_rules import CJK_TERMINALS, CLOSERS, TERMINALS
from strands_kokoro.speech_text import SpeechTextFilter
from strands_kokoro.turn_state import (
    WAKE,
    InboxItem,
    InputEnded,
    ModelCallEnded,
    RequestSender,
    TextArrived,
    ToolFinished,
    ToolStarted,
    TurnState,
)

__all__ = ["TurnSpeaker", "split_for_request"]


# What already ends a sentence (the chunker's marks, and a clause mark a reader pauses at as much).
_ENDS_A_SENTENCE = TERMINALS | CJK_TERMINALS | frozenset(":;")
_CLOSERS = "".join(CLOSERS)


def whole_answer_text(written: str) -> str:
    """The batch baseline's text: the answer cleaned and cut into sentences as bidi cuts it, each one
    ending as a sentence does.

    Why: joined with spaces, a heading or a list item without a period runs into the next sentence
    ("Getting started To install...": no pause, no falling pitch), where bidi speaks it as a request of
    its own, which the server ends as a sentence.
    """
    chunker, text_filter = IncrementalSentenceChunker(), SpeechTextFilter()
    sentences = [*chunker.feed(text_filter.feed(written) + text_filter.flush()), *chunker.flush()]
    spoken = [" ".join(sentence.split()) for sentence in sentences]
    return " ".join(
        text if text.rstrip(_CLOSERS)[-1:] in _ENDS_A_SENTENCE else f"{text}." for text in spoken if text
    )


def split_for_request(text: str, limit: int = MAX_TEXT_CHARS) -> list[str]:
    """Split a long batch answer at whitespace so each piece fits one request."""
    pieces: list[str] = []
    while len(text) > limit:
        cut = text.rfind(" ", 0, limit)
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut].strip())
        text = text[cut:]
    if text.strip():
        pieces.append(text.strip())
    return pieces


@dataclass(slots=True)
class _Filler:
    """A tool running: the requests made before it, and when its filler is due (once they played)."""

    requests_before: int
    due_at: float | None = None


class TurnSpeaker:
    """Consumes the turn's inbox until everything it will say is handed to the session half."""

    def __init__(self, state: TurnState, sender: RequestSender) -> None:
        self._state = state
        self._sender = sender
        self._fillers: dict[str, _Filler] = {}

    async def run(self) -> None:
        state = self._state
        try:
            await (self._bidi() if state.options.mode == "bidi" else self._batch())
        finally:
            state.input_done = True
            # A tool may be waiting on the end of a model call this task never reached (it failed).
            while not state.inbox.empty():
                if isinstance(leftover := state.inbox.get_nowait(), ModelCallEnded):
                    leftover.on_the_wire.set()
            await self._sender.close_if_finished()

    async def _bidi(self) -> None:
        state, pacer = self._state, self._state.pacer
        chunker = IncrementalSentenceChunker(max_chars=state.options.max_chars)
        text_filter = SpeechTextFilter()
        calls: list[ModelCallEnded] = []  # model calls whose text is not all on the wire yet
        writing = True
        try:
            while writing or pacer.unsent:
                item = await self._next()
                while True:  # take everything already queued: decide once per burst of tokens
                    now = state.now_ms()
                    match item:
                        case TextArrived(text=text):
                            sentences = chunker.feed(text_filter.feed(text))
                            pacer.write(sentences, chunker.pending(), now)
                        case ModelCallEnded() | InputEnded():
                            sentences = [*chunker.feed(text_filter.flush()), *chunker.flush()]
                            pacer.write(sentences, chunker.pending(), now)
                            if isinstance(item, ModelCallEnded):
                                calls.append(item)
                            else:
                                writing = False
                                self._fillers.clear()  # the agent is done: so are its tools
                        case ToolStarted(tool_use_id=tool, requests_before=before):
                            self._fillers[tool] = _Filler(before)
                        case ToolFinished(tool_use_id=tool):
                            self._fillers.pop(tool, None)
                    if state.inbox.empty():
                        break
                    item = state.inbox.get_nowait()
                if not state.speaking:
                    pacer.drop_all()
                    self._fillers.clear()
                urgent = any(call.awaited for call in calls)
                while (
                    piece := pacer.next_piece(state.now_ms(), state.ledger.in_flight(), urgent=urgent)
                ) is not None:
                    await self._say(piece)
                await self._fillers_due()
                if not pacer.unsent and self._sender.all_on_the_wire():
                    for call in calls:
                        call.on_the_wire.set()
                    calls.clear()
        finally:
            for call in calls:
                call.on_the_wire.set()

    async def _batch(self) -> None:
        """The baseline: the whole answer, cleaned, in as few requests as the server takes."""
        state = self._state
        whole: list[str] = []
        while not isinstance(item := await state.inbox.get(), InputEnded):
            if isinstance(item, TextArrived):
                whole.append(item.text)
            elif isinstance(item, ModelCallEnded):
                item.on_the_wire.set()
        for text in split_for_request(whole_answer_text("".join(whole))):
            # Never more in flight than the server queues (it would refuse the rest).
            while len(state.ledger.pending) >= MAX_IN_FLIGHT_URGENT and state.speaking:
                await state.inbox.get()  # only wakes come after the end of the text
            await self._request(text)

    async def _next(self) -> InboxItem:
        """The next inbox item, or a wake when a filler falls due first."""
        due = [f.due_at for f in self._fillers.values() if f.due_at is not None]
        if not due:
            return await self._state.inbox.get()
        timeout = max(0.0, (min(due) - self._state.now_ms()) / 1000)
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(self._state.inbox.get(), timeout)
        return WAKE

    async def _fillers_due(self) -> None:
        """Fillers whose tool runs on after the audio before it played (plus the configured wait)."""
        state = self._state
        now = state.now_ms()
        for tool, filler in list(self._fillers.items()):
            if filler.due_at is None and not state.ledger.earlier_pending(filler.requests_before):
                silence_from = max(now, state.pacer.play_end_ms or 0.0)
                filler.due_at = silence_from + 1000 * state.options.tool_filler_after_s
            if filler.due_at is not None and filler.due_at <= now and state.options.tool_filler is not None:
                del self._fillers[tool]
                await self._request(state.options.tool_filler, answer=False)

    async def _say(self, piece: Piece) -> None:
        """One pacer piece as a request, with the words around it as context."""
        state = self._state
        if not state.speaking:
            return
        request = state.ledger.new(
            piece.text,
            previous=piece.previous_text,
            following=piece.next_text,
            predicted_audio_ms=piece.predicted_audio_ms,
            predicted_buffer_ms=piece.predicted_buffer_ms,
        )
        await self._sender.send(request)

    async def _request(self, text: str, *, answer: bool = True) -> None:
        state = self._state
        text = text.strip()
        if not text or not state.speaking:
            return
        await self._sender.send(state.ledger.new(text, answer=answer))
