"""Unit tests: the wait arithmetic for a full server, the endpoint rotation, and the one-speech_error rule.

The turns here talk to a session double (a per-request session that refuses as a full model server does:
``overloaded`` with a ``retry_after_ms``); the same behaviour over real sockets is
``tests/faults/test_overload_retries.py``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncGenerator, Callable
from typing import Any

import httpx
import pytest

from strands_kokoro import KokoroSpeech
from strands_kokoro.protocol import (
    AudioData,
    ErrorCode,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
)
from strands_kokoro.sessions.base import OneRequestAtATimeSession, SessionEvent, SpeechSession
from strands_kokoro.sessions.http import refusal
from strands_kokoro.turn.endpoint_rotation import EndpointRing, routes_new_sessions
from strands_kokoro.turn.overload_retry import MIN_WAIT_S, OverloadRetry
from tests.scripted_model import FOUR_SENTENCES, ScriptedCall
from tests.strands_kokoro.speech_doubles import Turn, make_agent, run_turn

# ------------------------------------------------------------------------------ the wait arithmetic


def test_the_servers_retry_after_is_a_floor_and_jitter_only_stretches_it() -> None:
    retry = OverloadRetry(budget_s=10.0, backoff_s=0.25, jitter=0.2)
    assert retry.wait_s(retry_after_ms=800, refusals=1, waited_s=0.0, draw=0.0) == pytest.approx(0.8)
    assert retry.wait_s(retry_after_ms=800, refusals=1, waited_s=0.0, draw=0.5) == pytest.approx(0.88)
    assert retry.wait_s(retry_after_ms=800, refusals=7, waited_s=0.0, draw=0.999) == pytest.approx(
        0.96, abs=1e-3
    )


def test_without_a_retry_after_the_wait_doubles_from_the_backoff() -> None:
    retry = OverloadRetry(budget_s=10.0, backoff_s=0.25, jitter=0.0)
    waits = [retry.wait_s(retry_after_ms=None, refusals=n, waited_s=0.0, draw=0.3) for n in (1, 2, 3, 4)]
    assert waits == [0.25, 0.5, 1.0, 2.0]


def test_a_zero_wait_is_never_taken_literally() -> None:
    retry = OverloadRetry(budget_s=1.0, backoff_s=0.0, jitter=0.0)
    assert retry.wait_s(retry_after_ms=0, refusals=1, waited_s=0.0, draw=0.0) == MIN_WAIT_S
    assert retry.wait_s(retry_after_ms=None, refusals=1, waited_s=0.0, draw=0.0) == MIN_WAIT_S


def test_a_wait_that_would_pass_the_budget_is_none() -> None:
    retry = OverloadRetry(budget_s=2.0, backoff_s=0.25, jitter=0.2)
    assert retry.wait_s(retry_after_ms=500, refusals=3, waited_s=1.5, draw=0.0) == pytest.approx(0.5)
    assert retry.wait_s(retry_after_ms=500, refusals=3, waited_s=1.5, draw=0.5) is None  # 0.55 > 0.5 left
    assert retry.wait_s(retry_after_ms=3_000, refusals=1, waited_s=0.0, draw=0.0) is None  # asks too much
    no_budget = OverloadRetry(budget_s=0.0, backoff_s=0.25)
    assert no_budget.wait_s(retry_after_ms=None, refusals=1, waited_s=0.0, draw=0.0) is None


def test_the_waits_of_a_server_that_stays_full_add_up_to_at_most_the_budget() -> None:
    retry = OverloadRetry(budget_s=5.0, backoff_s=0.25)
    for draw in (0.0, 0.5, 0.999):
        waited, tries = 0.0, 1
        while (
            wait := retry.wait_s(retry_after_ms=None, refusals=tries, waited_s=waited, draw=draw)
        ) is not None:
            waited += wait
            tries += 1
        assert waited <= 5.0 and tries == 5  # 0.25 + 0.5 + 1 + 2 (+ jitter); the next 4 s pass the budget


# ------------------------------------------------------------------------------ the endpoint rotation


def _opener(name: str, opened: list[str]) -> Callable[[], SpeechSession]:
    def open_session() -> SpeechSession:
        opened.append(name)
        return OverloadedSessionDouble(refuse=lambda _rid, _attempt: False)

    return open_session


def test_a_turn_tries_every_endpoint_once_per_round_then_waits() -> None:
    opened: list[str] = []
    ring = EndpointRing([_opener(name, opened) for name in "abc"])
    cursor = ring.cursor()
    cursor.open()
    assert [cursor.advance(), cursor.advance(), cursor.advance()] == [True, True, False]
    cursor.open()
    assert opened == ["a", "a"] and cursor.index == 0 and cursor.moves_on_refusal


def test_the_endpoint_that_served_is_where_the_next_turn_starts() -> None:
    opened: list[str] = []
    ring = EndpointRing([_opener(name, opened) for name in "ab"])
    first = ring.cursor()
    first.advance()
    first.served()
    assert first.advance()  # the round started over where it was served: the other one is untried
    ring.cursor().open()
    assert opened == ["b"]


def test_one_endpoint_moves_on_a_refusal_only_when_a_new_session_is_routed_anew() -> None:
    assert not EndpointRing([_opener("a", [])]).cursor().moves_on_refusal
    sagemaker = EndpointRing([_opener("a", [])], new_session_reroutes=True).cursor()
    assert sagemaker.moves_on_refusal and not sagemaker.advance()  # a new session, after the wait
    assert routes_new_sessions("sagemaker:kokoro?region=eu-west-1")
    assert not routes_new_sessions("sagemaker-batch:kokoro") and not routes_new_sessions("ws://a:1")


@pytest.mark.parametrize("endpoint", [[], "", ["ws://a:1", ""], [b"ws://a:1"]])
def test_an_endpoint_list_with_nothing_to_open_is_refused_at_once(endpoint: object) -> None:
    with pytest.raises(ValueError, match="endpoint"):
        KokoroSpeech(endpoint=endpoint)  # type: ignore[arg-type]


def test_the_single_endpoint_form_is_kept() -> None:
    speech = KokoroSpeech(endpoint="ws://a:1")
    assert speech.endpoint == "ws://a:1" and speech.endpoints == ("ws://a:1",)
    both = KokoroSpeech(endpoint=("ws://a:1", "ws://b:2"))
    assert both.endpoint == "ws://a:1" and both.endpoints == ("ws://a:1", "ws://b:2")


# ------------------------------------------------------------------------------ HTTP refusals


def _response(status: int, headers: dict[str, str]) -> httpx.Response:
    return httpx.Response(status, headers=headers)


def test_a_429_is_overloaded_and_its_retry_after_header_is_the_wait() -> None:
    coded = b'{"type":"error","request_id":"r1","code":"overloaded","message":"full","retry_after_ms":700}'
    assert refusal(coded, _response(429, {"retry-after": "3"}), "r1").retry_after_ms == 700  # the body's
    body_without_wait = b'{"type":"error","request_id":"r1","code":"overloaded","message":"full"}'
    assert refusal(body_without_wait, _response(429, {"retry-after": "2"}), "r1").retry_after_ms == 2000
    proxy = refusal(
        b"Too Many Requests", _response(429, {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}), "r1"
    )
    assert proxy.code == ErrorCode.OVERLOADED and proxy.retry_after_ms is None
    assert refusal(b"nope", _response(500, {}), "r1").code == "http_500"


# ------------------------------------------------------------------------------ turns on a session double

Refuse = Callable[[str, int], bool]  # (request_id, attempt starting at 1) -> answer overloaded?


class OverloadedSessionDouble(OneRequestAtATimeSession):
    """A session double for a full server: refuses the tries ``refuse`` picks with ``overloaded`` and
    ``retry_after_ms``, answers the others with one audio frame; counts the tries in ``attempts``."""

    def __init__(
        self, refuse: Refuse, retry_after_ms: int | None = None, attempts: Counter[str] | None = None
    ):
        super().__init__()
        self.refuse = refuse
        self.retry_after_ms = retry_after_ms
        self.attempts: Counter[str] = attempts if attempts is not None else Counter()

    async def __aenter__(self) -> OverloadedSessionDouble:
        self._open = True
        return self

    async def _invoke(self, request: SynthesizeRequest) -> AsyncGenerator[SessionEvent, None]:
        request_id = request.request_id or ""
        self.attempts[request_id] += 1
        await asyncio.sleep(0.001)
        if self.refuse(request_id, self.attempts[request_id]):
            yield ServerError(request_id, ErrorCode.OVERLOADED, "full", self.retry_after_ms)
            return
        yield SynthesisStarted(request_id)
        yield AudioData(request_id, b"\x01\x00" * 240)
        yield SynthesisCompleted(request_id, 10.0, 1, 1.0, 1.0)


async def _turn_on_double(
    refuse: Refuse, *, retry_after_ms: int | None, **options: Any
) -> tuple[Turn, Counter[str]]:
    attempts: Counter[str] = Counter()
    speech = KokoroSpeech(
        session_factory=lambda: OverloadedSessionDouble(refuse, retry_after_ms, attempts), **options
    )
    agent, _ = make_agent(speech, [ScriptedCall(FOUR_SENTENCES)], tokens_per_s=5000)
    return await run_turn(speech.stream(agent, "Tell me about otters.")), attempts


@pytest.mark.anyio
async def test_refused_requests_are_sent_again_and_every_one_is_spoken() -> None:
    turn, attempts = await _turn_on_double(lambda _rid, attempt: attempt == 1, retry_after_ms=20)
    assert not turn.of("speech_error")
    completes = turn.of("sentence_complete")
    assert [c["sentence"] for c in completes] == list(range(len(completes))) and completes
    assert all(count == 2 for count in attempts.values())  # refused once, sent once more, no more


@pytest.mark.anyio
async def test_a_server_that_stays_full_is_reported_once_and_the_text_goes_on() -> None:
    turn, attempts = await _turn_on_double(lambda _rid, _a: True, retry_after_ms=30, overload_retry_s=0.3)
    assert turn.text() == FOUR_SENTENCES and not turn.of("error")
    [failure] = turn.of("speech_error")
    assert failure["code"] == "overloaded" and "0.3 s" in failure["message"]
    assert not turn.of("audio_chunk")
    assert max(attempts.values()) >= 2  # retried within the budget before giving up


@pytest.mark.anyio
async def test_several_refused_requests_still_make_one_speech_error() -> None:
    """Batch mode sends the whole answer in two requests: both refused, one report."""
    answer_of_two_requests = FOUR_SENTENCES * 30
    attempts: Counter[str] = Counter()
    speech = KokoroSpeech(
        mode="batch",
        session_factory=lambda: OverloadedSessionDouble(lambda _rid, _a: True, 20, attempts),
        overload_retry_s=0.2,
    )
    agent, _ = make_agent(speech, [ScriptedCall(answer_of_two_requests)], tokens_per_s=50_000)
    turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    assert len(attempts) >= 2
    [failure] = turn.of("speech_error")
    assert failure["code"] == "overloaded"


@pytest.mark.anyio
async def test_a_wait_longer_than_the_budget_gives_up_without_a_retry() -> None:
    turn, attempts = await _turn_on_double(lambda _rid, _a: True, retry_after_ms=60_000, overload_retry_s=2.0)
    [failure] = turn.of("speech_error")
    assert failure["code"] == "overloaded"
    assert set(attempts.values()) == {1}


@pytest.mark.anyio
async def test_no_budget_means_no_retry() -> None:
    turn, attempts = await _turn_on_double(lambda _rid, _a: True, retry_after_ms=None, overload_retry_s=0.0)
    assert [e["code"] for e in turn.of("speech_error")] == ["overloaded"]
    assert set(attempts.values()) == {1}
