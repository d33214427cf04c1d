"""What the tasks of one spoken turn share, and the typed messages its speaker task is woken by.

One way to wake the speaker: everything it reacts to arrives in its inbox as a typed message (text, the
end of a model call, a tool starting or ending, a change elsewhere that may allow the next request, the
end of the input). The one wait outside it is a tool's: it waits for the text written before it to be
on the wire (:class:`ModelCallEnded`'s ``on_the_wire``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Final

from strands_kokoro.pacer import SpeechPacer
from strands_kokoro.request_ledger import RequestLedger
from strands_kokoro.speech_options import SpeechOptions
from strands_kokoro.turn_output import TurnOutput

__all__ = [
    "WAKE",
    "InboxItem",
    "InputEnded",
    "ModelCallEnded",
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


@dataclass(eq=False)
class TurnState:
    """The turn's shared state: its options, inbox, requests, pacer and ordered output, and its flags."""

    request_id: str
    options: SpeechOptions
    pacer: SpeechPacer
    output: TurnOutput
    ledger: RequestLedger = field(default_factory=RequestLedger)
    inbox: asyncio.Queue[InboxItem] = field(default_factory=asyncio.Queue)
    started: float = field(default_factory=time.perf_counter)
    muted: bool = False  # interrupted: nothing more is spoken in this turn
    failed: bool = False  # speech failed for the rest of the turn (the text goes on)
    input_done: bool = False  # the speaker has handed over everything it will

    def now_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000.0

    def wake(self) -> None:
        self.inbox.put_nowait(WAKE)

    @property
    def speaking(self) -> bool:
        return not (self.muted or self.failed)

    def finished(self) -> bool:
        return self.input_done and not self.ledger.pending
