"""A full model server, over real sockets: the turn retries a refused answer, gives up once, moves on.

The full server is the WebSocket stand-in of :mod:`tests.faults.overloading_server` (the real protocol,
refusing the requests a test picks with ``overloaded`` and a ``retry_after_ms``, as a full model server
does): the real server refuses only when its capacity is taken by other listeners, which a test cannot
make happen at a chosen request. The server that takes the answer on is the REAL model server app
(with the id engine, whose audio says which text it was made from).

- a refused answer is sent again after the wait the server asked for, and then spoken, once, in order;
- a server that stays full past the budget: exactly one ``speech_error`` (``overloaded``), no audio, and
  the text answer goes on;
- with two endpoints, a refused answer (or an unreachable server) goes to the second at once, and the
  next turn starts where the last one was served;
- one ``sagemaker:`` endpoint: the retry is a new session, which SageMaker places on another instance
  (the REAL HTTP/2 SDK, through the router stand-in, here placing each new session on the next one).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from smithy_http.aio import HTTPResponse

from strands_kokoro import KokoroSpeech
from strands_kokoro.protocol import WS_PATH
from tests.faults.id_engine import IdEngine
from tests.faults.overloading_server import OverloadingServer, overloading_server
from tests.faults.test_speech_faults import SIX, assert_spoken_once_in_order
from tests.model_server_process import free_port, running_app
from tests.scripted_model import ScriptedCall
from tests.strands_kokoro.speech_doubles import Turn, make_agent, run_turn
from tests.strands_kokoro.standins.sagemaker_bidi_router import SageMakerBidiRouter
from tests.strands_kokoro.test_sessions_sagemaker import REGION, dummy_botocore_session
from tts_container.app import create_app

pytestmark = pytest.mark.anyio

RETRY_AFTER_MS = 150


async def spoken(speech: KokoroSpeech, answer: str = SIX) -> Turn:
    agent, _ = make_agent(speech, [ScriptedCall(answer)], tokens_per_s=300)
    return await run_turn(speech.stream(agent, "Tell me about otters."))


def refused_gaps(server: OverloadingServer, request_id: str) -> list[float]:
    """Seconds between one request's arrivals at the server (its first try and each re-send)."""
    times = [at for rid, at in server.arrivals if rid == request_id]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


async def test_a_refused_answer_is_sent_again_after_the_wait_asked_for_and_then_spoken() -> None:
    def refuse(request_id: str, attempt: int) -> bool:
        return request_id.endswith("-0") and attempt <= 2  # the start of the answer, twice

    async with overloading_server(refuse, retry_after_ms=RETRY_AFTER_MS) as server:
        turn = await spoken(KokoroSpeech(endpoint=server.url, overload_retry_s=5.0))
    [first] = [rid for rid in server.refused]
    assert server.refused[first] == 2 and server.attempts[first] == 3
    assert all(gap >= RETRY_AFTER_MS / 1000 for gap in refused_gaps(server, first))  # never sooner
    assert_spoken_once_in_order(turn, SIX)


async def test_a_server_full_past_the_budget_is_one_speech_error_and_the_text_goes_on() -> None:
    async with overloading_server(lambda _id, _attempt: True, retry_after_ms=RETRY_AFTER_MS) as server:
        turn = await spoken(KokoroSpeech(endpoint=server.url, overload_retry_s=0.6))
    assert turn.text() == SIX and not turn.of("error")
    [failure] = turn.of("speech_error")
    assert failure["code"] == "overloaded" and "text goes on" in failure["message"]
    assert "127.0.0.1" not in failure["message"]
    assert not turn.of("audio_chunk") and not turn.of("sentence_complete")
    first = server.arrivals[0][0]
    assert server.attempts[first] >= 2  # it was retried before giving up
    span = server.arrivals[-1][1] - server.arrivals[0][1]
    assert span >= RETRY_AFTER_MS / 1000  # the waits were taken, not skipped


async def test_a_refused_answer_goes_to_the_second_endpoint_and_the_next_turn_starts_there() -> None:
    # The first server asks for a wait longer than the whole budget: waiting for it would give up at once,
    # so a spoken answer proves the turn went to the second server instead of waiting.
    full = overloading_server(lambda _id, _attempt: True, retry_after_ms=60_000)
    async with full as refusing, running_app(create_app(IdEngine)) as address:
        speech = KokoroSpeech(endpoint=[refusing.url, f"ws://{address}{WS_PATH}"], overload_retry_s=2.0)
        turn = await spoken(speech)
        refused_before = sum(refusing.attempts.values())
        again = await spoken(speech)
    assert refused_before >= 1
    assert_spoken_once_in_order(turn, SIX)
    assert_spoken_once_in_order(again, SIX)
    assert sum(refusing.attempts.values()) == refused_before  # the next turn went where it was served


async def test_an_unreachable_endpoint_is_skipped_for_the_next_one() -> None:
    async with running_app(create_app(IdEngine)) as address:
        dead = f"ws://127.0.0.1:{free_port()}"
        speech = KokoroSpeech(endpoint=[dead, f"ws://{address}"], reconnect_attempts=0)
        turn = await spoken(speech)
    assert_spoken_once_in_order(turn, SIX)


async def test_every_endpoint_full_is_still_one_speech_error() -> None:
    refuse_all = overloading_server(lambda _id, _attempt: True, retry_after_ms=RETRY_AFTER_MS)
    async with refuse_all as one, overloading_server(lambda _id, _a: True) as two:
        speech = KokoroSpeech(endpoint=[one.url, two.url], overload_retry_s=0.5, reconnect_backoff_s=0.05)
        turn = await spoken(speech)
    assert turn.text() == SIX
    [failure] = turn.of("speech_error")
    assert failure["code"] == "overloaded" and "every speech endpoint" in failure["message"]
    assert one.refused and two.refused  # both were asked


class InstancesRouter(SageMakerBidiRouter):
    """The SageMaker router stand-in, placing each new session on the next instance behind the endpoint
    (as SageMaker places a new session on the least-loaded one: the first instance here is the full one)."""

    def __init__(self, instance_urls: list[str]) -> None:
        super().__init__(instance_urls[0])
        self.instances = [url.rstrip("/") + WS_PATH for url in instance_urls]
        self.sessions = 0

    async def send(self, request: Any, *, request_config: Any = None) -> HTTPResponse:
        self.model_ws_url = self.instances[min(self.sessions, len(self.instances) - 1)]
        self.sessions += 1
        return await super().send(request, request_config=request_config)


async def test_over_sagemaker_a_refused_answer_is_retried_on_a_new_session() -> None:
    full = overloading_server(lambda _id, _attempt: True, retry_after_ms=RETRY_AFTER_MS)
    async with (
        full as refusing,
        running_app(create_app(IdEngine)) as address,
        InstancesRouter([refusing.url, f"ws://{address}"]) as router,
    ):
        speech = KokoroSpeech(
            endpoint=f"sagemaker:kokoro-standin?region={REGION}",
            botocore_session=dummy_botocore_session(),
            transport=router,
            overload_retry_s=3.0,
        )
        agent, _ = make_agent(speech, [ScriptedCall(SIX)], tokens_per_s=300)
        # Not ``run_turn``: the model server runs on this loop here, and its handler of the router's
        # connection outlives the turn by a moment (the router hangs up after the turn's input ended).
        turn = Turn()
        async with asyncio.timeout(120):
            async for event in speech.stream(agent, "Tell me about otters."):
                turn.events.append(event)
    assert refusing.refused and router.sessions == 2  # refused on the first instance, then a new session
    assert_spoken_once_in_order(turn, SIX)
