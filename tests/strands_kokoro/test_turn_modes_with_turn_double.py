"""The turn's two modes, each alone with a turn double: which one a turn gets, and how each treats the end
of a model call and a tool. Whole turns in both modes run against the real model server in
``test_speech.py`` and ``test_speech_pacing.py``."""

from __future__ import annotations

import dataclasses
from typing import cast

import pytest

from strands_kokoro.pacing.pacer import SpeechPacer
from strands_kokoro.speech_options import SpeechMode
from strands_kokoro.turn.modes import BatchMode, BidiMode, ModelCall, turn_mode
from strands_kokoro.turn.request_ledger import RequestLedger
from strands_kokoro.turn.session import TurnSession
from tests.strands_kokoro.test_request_ledger import OPTIONS

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class TurnDouble:
    """A turn that counts its wake-ups and sends nothing."""

    def __init__(self) -> None:
        self.ledger = RequestLedger("t", OPTIONS, lambda request, reply: None)
        self.speaking = True
        self.writing = True
        self.wakes = 0

    def now_ms(self) -> float:
        return 0.0

    def wake(self) -> None:
        self.wakes += 1

    async def wait(self) -> None:
        return None


NO_SESSION = cast(TurnSession, None)


@pytest.mark.parametrize(("mode", "kind"), [("bidi", BidiMode), ("batch", BatchMode)])
async def test_a_turn_gets_the_mode_its_options_name(mode: SpeechMode, kind: type) -> None:
    options = dataclasses.replace(OPTIONS, mode=mode)
    assert isinstance(turn_mode(TurnDouble(), options, SpeechPacer(), NO_SESSION), kind)


async def test_batch_holds_no_model_call_and_says_no_filler() -> None:
    turn = TurnDouble()
    mode = BatchMode(turn, NO_SESSION)
    call = ModelCall()
    mode.write("Hello there. ")
    mode.end_call(call)
    mode.tool_started("tool-1")
    assert call.on_the_wire.is_set() and mode.next_due_ms() is None and turn.wakes == 0


async def test_bidi_holds_a_model_call_until_its_text_is_on_the_wire() -> None:
    turn, pacer = TurnDouble(), SpeechPacer()
    options = dataclasses.replace(OPTIONS, tool_filler="One moment.")
    mode = BidiMode(turn, options, pacer, NO_SESSION)
    call = ModelCall()
    mode.write("Hello there")
    mode.end_call(call)  # the last sentence is complete: the pacer has it to send
    mode.tool_started("tool-1")
    assert not call.on_the_wire.is_set() and pacer.unsent and turn.wakes == 2
    mode.drop()
    assert not pacer.unsent
