"""What the two sides of one spoken turn share, how speech stops, and the typed messages that wake the
text side.

The text side (:mod:`strands_kokoro.turn_speaker`: filter, chunker, pacer) and the audio side
(:mod:`strands_kokoro.turn_session`: the session and its receiver) are siblings: neither imports the
other. Both report to the turn's :class:`TurnState`: its ledger owns the requests, their order, release
and teardown; :meth:`TurnState.stop` is the one way speech ends before the turn does.

One way to wake the speaker: everything it reacts to arrives in its inbox as a typed message (text, the
end of a model call, a tool starting or ending, a change elsewhere that may allow the next request, the
end of the input). The one wait outside it is a tool's: it waits for the text written before it to be
on the wire (:class:`ModelCallEnded`'s ``on_the_wire``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Final, Protocol

from strands_kokoro.audio_encoding import new_encoder
from strands_kokoro.events import Event, speech_error, speech_interrupted
from strands_kokoro.pacer import SpeechPacer
from strands_kokoro.request_ledger import RequestLedger, TurnRequest
from strands_kokoro.speech_options import SpeechOptions
from strands_kokoro.turn_errors import INTERRUPTED
from strands_kokoro.turn_output import TurnOutput

__all__ = [
    "WAKE",
    "InboxItem",
    "InputEnded",
    "ModelCallEnded",
    "RequestSender",
    "SpeechState",
    "TextArrived",
    "ToolFinished",
    "ToolStarted",
    "TurnState",
]


@dataclass(frozen=True, slots=True)
class TextArrived:
    """A text delta of the model's answer."""

    text: str


@dataclass(eq=False, slots=True)
class ModelCallEnded:
    """A model call ended (maybe before a tool call): its last sentence is complete. ``on_the_wire`` is
    set once its text was sent on an open session; a tool about to run waits for it (``awaited``), which
    makes the speaker hand all of it over at once."""

    on_the_wire: asyncio.Event = field(default_factory=asyncio.Event)
    awaited: bool = False


@dataclass(frozen=True, slots=True)
class ToolStarted:
    tool_use_id: str
    requests_before: int  # requests made before the tool: the filler waits for their audio


@dataclass(frozen=True, slots=True)
class ToolFinished:
    tool_use_id: str


class _Wake:
    """Something the speaker's decisions depend on changed (a request completed, a session opened)."""


class InputEnded:
    """The agent is done: no more text comes."""


WAKE: Final = _Wake()
INPUT_ENDED: Final = InputEnded()
InboxItem = TextArrived | ModelCallEnded | ToolStarted | ToolFinished | _Wake | InputEnded


class SpeechState(Enum):
    """Where the turn's speech is: speaking, or stopped for the rest of the turn (the text goes on)."""

    SPEAKING = "speaking"
    INTERRUPTED = "interrupted"  # the listener spoke over it: nothing more is said
    FAILED = "failed"  # a failure its speech_error named: nothing more is said


class RequestSender(Protocol):
    """What the text side needs of the audio side, handed to it by the turn (it imports neither)."""

    async def send(self, request: TurnRequest) -> None:
        """Send a request of the ledger's, in order: now if a session is open, else when one opens."""

    def all_on_the_wire(self) -> bool:
        """Has every pending request been sent on the open session?"""

    async def close_if_finished(self) -> None:
        """Close the session if the turn is owed nothing more."""


class TurnState:
    """What the turn owns and its two sides share: options, inbox, requests, pacer, events, one clock, and
    where its speech is (:class:`SpeechState`)."""

    def __init__(self, request_id: str, options: SpeechOptions, outbox: asyncio.Queue[Event | None]) -> None:
        self.request_id = request_id
        self.options = options
        self.started = time.perf_counter()
        self.pacer = SpeechPacer()
        encoder = new_encoder(options.audio_format, options.sample_rate)
        self.output = TurnOutput(outbox, self.now_ms, self.pacer, encoder=encoder)
        self.ledger = RequestLedger(request_id, options, self.output.release)
        self.inbox: asyncio.Queue[InboxItem] = asyncio.Queue()
        self.speech = SpeechState.SPEAKING
        self.input_done = False  # the text side has handed over everything it will

    def now_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000.0

    def wake(self) -> None:
        self.inbox.put_nowait(WAKE)

    @property
    def speaking(self) -> bool:
        return self.speech is SpeechState.SPEAKING

    def finished(self) -> bool:
        return self.input_done and not self.ledger.pending

    def stop(self, reason: str, message: str = "") -> None:
        """Speech ends for the rest of the turn, the text goes on: every request still owed and the text
        not yet sent are dropped, and one event says why (``speech_interrupted`` when ``reason`` is
        :data:`~strands_kokoro.turn_errors.INTERRUPTED`, else a ``speech_error`` with that code)."""
        self.speech = SpeechState.INTERRUPTED if reason == INTERRUPTED else SpeechState.FAILED
        dropped = self.ledger.clear()
        self.pacer.drop_all()
        self.wake()
        if reason == INTERRUPTED:
            self.output.emit(speech_interrupted(dropped, self.now_ms()))
        else:
            self.output.emit(speech_error(reason, message))
