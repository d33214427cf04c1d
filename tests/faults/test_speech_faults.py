"""On the client side: a turn whose speech server refuses or cannot be set up.

- ``overloaded``: the turn re-sends a refused request, keeps its place in the order, and the
  listener hears every sentence once, in order: checked on the received PCM, which the stand-in server
  makes from each request's own text. And a well-behaved turn never fills the real server's queue.
- setup errors: an endpoint no session understands, a bad ``?option``, a missing extra: one coded
  ``speech_error`` in words (no URL, no exception class), and the text answer completes.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator

import pytest

from strands_kokoro import KokoroSpeech
from strands_kokoro.errors import SETUP_FAILURES
from strands_kokoro.protocol import WS_PATH, ServerError
from strands_kokoro.sessions.base import SessionEvent
from strands_kokoro.sessions.ws import WebSocketSession
from tests.faults.id_engine import IdEngine, expected_pcm
from tests.faults.overloading_server import overloading_server
from tests.model_server_process import running_app
from tests.scripted_model import ScriptedCall
from tests.strands_kokoro.speech_doubles import Turn, make_agent, run_turn, words
from tts_container.app import create_app

pytestmark = pytest.mark.anyio

SIX = (
    "Otters sleep holding hands. They float on their backs. Kelp keeps them in place. "
    "Their fur is very dense. They use rocks as tools. Pups ride on their mothers."
)


def assert_spoken_once_in_order(turn: Turn, answer: str) -> None:
    """Every request completed once, in order; its audio is exactly the audio of its own text."""
    assert not turn.of("speech_error") and not turn.of("error"), turn.of("speech_error")
    assert turn.text() == answer
    completes = turn.of("sentence_complete")
    assert [c["sentence"] for c in completes] == list(range(len(completes)))
    assert words(" ".join(c["text"] for c in completes)) == words(answer)
    audio = turn.audio_by_sentence()
    for complete in completes:
        assert audio[complete["sentence"]] == expected_pcm(complete["text"]), complete["text"]
    heard = [chunk["sentence"] for chunk in turn.of("audio_chunk")]
    assert heard == sorted(heard)  # no request's audio interleaved with another's


async def test_overloaded_requests_are_resent_and_every_sentence_is_spoken_once_in_order() -> None:
    def refuse(request_id: str, attempt: int) -> bool:
        index = int(request_id.rpartition("-")[2])
        return (index % 2 == 1 and attempt == 1) or (index == 1 and attempt == 2)  # request 1 twice

    async with overloading_server(refuse) as server:
        speech = KokoroSpeech(endpoint=server.url, reconnect_backoff_s=0.01)
        agent, _ = make_agent(speech, [ScriptedCall(SIX)], tokens_per_s=300)
        turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    assert server.refused, "the stand-in refused nothing: the test proves nothing"
    assert_spoken_once_in_order(turn, SIX)
    for request_id, refusals in server.refused.items():
        assert server.attempts[request_id] == refusals + 1  # re-sent until accepted, never more


class RecordingSession(WebSocketSession):
    """The real WebSocket session, keeping every error the server sent in ``errors``."""

    def __init__(self, endpoint: str, errors: list[ServerError]) -> None:
        super().__init__(endpoint)
        self.errors = errors

    async def events(self) -> AsyncIterator[SessionEvent]:
        async for event in super().events():
            if isinstance(event, ServerError):
                self.errors.append(event)
            yield event


async def test_a_fast_writer_never_fills_the_servers_queue() -> None:
    """Forty sentences written at once: the turn keeps fewer in flight than the server queues."""
    answer = " ".join(f"Sentence number {n} is here." for n in range(40))
    errors: list[ServerError] = []
    engine = IdEngine(delay_s=0.01)
    async with running_app(create_app(lambda: engine)) as address:
        speech = KokoroSpeech(session_factory=lambda: RecordingSession(f"ws://{address}{WS_PATH}", errors))
        agent, _ = make_agent(speech, [ScriptedCall(answer)], tokens_per_s=5_000)
        turn = await run_turn(speech.stream(agent, "Count."))
    assert errors == []
    assert_spoken_once_in_order(turn, answer)


# ------------------------------------------------------------------------------------ setup errors


@pytest.mark.parametrize(
    ("endpoint", "code"),
    [
        ("foo://speech.internal:9000", "unknown_endpoint_scheme"),
        ("speech.internal:9000", "unknown_endpoint_scheme"),
        ("sagemaker:", "bad_endpoint"),
        ("sagemaker:kokoro-prod?regoin=us-east-1", "bad_endpoint_option"),
        ("sagemaker-batch:kokoro-prod?bogus=1", "bad_endpoint_option"),
    ],
)
async def test_a_speech_setup_error_is_a_coded_speech_error_and_the_text_goes_on(
    endpoint: str, code: str
) -> None:
    turn = await spoken_turn(KokoroSpeech(endpoint=endpoint))
    assert_setup_failed(turn, code)


async def test_a_missing_sagemaker_extra_is_a_coded_speech_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated: the SageMaker session module cannot be imported (as without the 'sagemaker' extra)."""
    monkeypatch.setitem(sys.modules, "strands_kokoro.sessions.sagemaker", None)
    turn = await spoken_turn(KokoroSpeech(endpoint="sagemaker:kokoro-prod?region=us-east-1"))
    assert_setup_failed(turn, "missing_dependency")


async def spoken_turn(speech: KokoroSpeech) -> Turn:
    agent, _ = make_agent(speech, [ScriptedCall(SIX)], tokens_per_s=300)
    return await run_turn(speech.stream(agent, "Tell me about otters."))


def assert_setup_failed(turn: Turn, code: str) -> None:
    assert turn.text() == SIX and not turn.of("error") and not turn.of("audio_chunk")
    [failure] = turn.of("speech_error")
    assert failure["code"] == code and code in SETUP_FAILURES
    message = failure["message"]
    for internal in ("speech.internal", "foo:", "kokoro-prod", "regoin", "bogus", "Error", "Exception"):
        assert internal not in message, message


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_server_still_loading_is_waited_for_not_reported(scheme: str) -> None:
    """A (re)started server answers ``not_ready`` until its model is warm (WS: an error frame, then close
    1013 "try again later"; POST: 503). That is a reason to retry, not a speech failure: no
    ``speech_error``, and once it is up every sentence is spoken once, in order."""
    loaded = threading.Event()

    def slow_load() -> IdEngine:
        loaded.wait(30)
        return IdEngine()

    async with running_app(create_app(slow_load), wait_ready=False) as address:
        speech = KokoroSpeech(
            endpoint=f"{scheme}://{address}", reconnect_attempts=30, reconnect_backoff_s=0.02
        )
        agent, _ = make_agent(speech, [ScriptedCall(SIX)], tokens_per_s=300)
        stream = speech.stream(agent, "Tell me about otters.")
        threading.Timer(0.5, loaded.set).start()  # the model is ready half a second into the turn
        turn = await run_turn(stream)
    assert_spoken_once_in_order(turn, SIX)
