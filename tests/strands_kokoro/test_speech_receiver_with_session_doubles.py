"""The turn's receiver over session doubles (unit tests): what it does with a refusal and with a fault.

A refusal the receiver handles must not make the turn wait on itself.

The per-request sessions (HTTP POST, SageMaker response streaming) drain on ``close()``: they wait until
the consumer of their events has settled every sent request. The turn's receiver *is* that consumer, so
a close started from it waited on itself for the whole drain timeout (30 s by default) before
``agent_end``, whenever a setting refusal (an unknown voice) left another sent request open: a batch
answer of two requests (the case below), or a fast writer in bidi. The double refuses every request,
as the real server does an unknown voice, and drains for an hour: a turn that waits on itself fails
the turn's timeout instead of passing late.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from strands_kokoro import KokoroSpeech
from strands_kokoro.protocol import ServerError, SynthesizeRequest
from strands_kokoro.sessions.base import OneRequestAtATimeSession, SessionEvent
from tests.scripted_model import FOUR_SENTENCES, ScriptedCall
from tests.strands_kokoro.speech_doubles import make_agent, run_turn

pytestmark = pytest.mark.anyio

LONG_ANSWER = FOUR_SENTENCES * 30  # over the 5,000 characters of one batch request: two requests


class RefusingSessionDouble(OneRequestAtATimeSession):
    """Refuses every request as the model server refuses an unknown voice; drains for up to an hour."""

    def __init__(self) -> None:
        super().__init__(drain_timeout_s=3600.0)
        self.sent: list[str] = []

    async def __aenter__(self) -> RefusingSessionDouble:
        self._open = True
        return self

    async def send(self, request: SynthesizeRequest) -> None:
        self.sent.append(request.text)
        await super().send(request)

    async def _invoke(self, request: SynthesizeRequest) -> AsyncGenerator[SessionEvent, None]:
        await asyncio.sleep(0.01)
        yield ServerError(request.request_id, "unknown_voice", "unknown voice 'zz_nobody'")


async def test_a_setting_refusal_with_another_request_open_ends_the_turn_at_once() -> None:
    sessions: list[RefusingSessionDouble] = []

    def open_session() -> RefusingSessionDouble:
        sessions.append(RefusingSessionDouble())
        return sessions[-1]

    speech = KokoroSpeech(mode="batch", session_factory=open_session)  # type: ignore[arg-type]
    agent, _ = make_agent(speech, [ScriptedCall(LONG_ANSWER)], tokens_per_s=5000)
    async with asyncio.timeout(60):  # the drain timeout is an hour: waiting on itself cannot pass
        turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    assert turn.text() == LONG_ANSWER
    [error] = turn.of("speech_error")
    assert error["code"] == "unknown_voice"
    assert len(sessions) == 1 and len(sessions[0].sent) >= 2  # another request was open at the refusal


class FaultySessionDouble(RefusingSessionDouble):
    """Opens, then fails while speaking with an exception no session raises (a bug, not a drop)."""

    async def events(self) -> AsyncGenerator[SessionEvent, None]:
        await asyncio.sleep(0.05)
        raise RuntimeError("a bug in the event path")
        yield  # an async generator, as the sessions' events are


async def test_a_fault_while_speaking_is_an_internal_error_not_a_setup_failure() -> None:
    speech = KokoroSpeech(session_factory=FaultySessionDouble)  # type: ignore[arg-type]
    agent, _ = make_agent(speech, [ScriptedCall(FOUR_SENTENCES)], tokens_per_s=5000)
    turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    assert turn.text() == FOUR_SENTENCES  # the text goes on
    [error] = turn.of("speech_error")
    assert error["code"] == "internal_error" and "text goes on" in error["message"]
