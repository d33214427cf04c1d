"""The boto3 response-stream session, through REAL boto3 and our REAL model server.

What this transport does its own way (the whole session contract runs on the WebSocket and SageMaker
bidi sessions): one signed ``InvokeEndpointWithResponseStream`` call per request, in order, each with its
rate and speed; the event stream's payload parts joined at any offset; a broken stream,
a refused request and a cancel as coded events; an endpoint that does not answer.

boto3 is pointed (``endpoint_url``) at :class:`SageMakerResponseStreamServer`, a local HTTP server that
speaks SageMaker's event-stream response format and forwards to the model server's POST /invocations.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import botocore.session
import httpx
import pytest

from strands_kokoro.protocol import (
    SAMPLE_WIDTH_BYTES,
    AudioData,
    Cancelled,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    WordTimings,
)
from strands_kokoro.sessions import open_session
from strands_kokoro.sessions.aws_credentials import SageMakerError
from strands_kokoro.sessions.base import SessionClosedError, SessionEvent
from strands_kokoro.sessions.sagemaker_batch import SageMakerBatchSession, sse_payloads
from tests.strands_kokoro.standins.sagemaker_response_stream import SageMakerResponseStreamServer

pytestmark = pytest.mark.anyio

REGION = "us-east-1"
ACCESS_KEY = "AKIDSTANDIN"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared_standin(model_server: Any) -> Iterator[SageMakerResponseStreamServer]:
    with SageMakerResponseStreamServer(model_server.http_url, region=REGION) as server:
        yield server


@pytest.fixture
def standin(shared_standin: SageMakerResponseStreamServer) -> SageMakerResponseStreamServer:
    """The module's stand-in (one server: stopping one costs half a second), reset for each test."""
    shared_standin.part_size = None
    shared_standin.break_after = None
    shared_standin.endpoint_names.clear()
    shared_standin.access_keys.clear()
    return shared_standin


def dummy_botocore_session() -> botocore.session.Session:
    """Static dummy credentials: the stand-in checks the signature's shape, AWS never sees it."""
    session = botocore.session.Session()
    session.set_credentials(ACCESS_KEY, "standin-secret")
    session.set_config_variable("region", REGION)
    return session


def open_batch(endpoint_url: str, **options: Any) -> SageMakerBatchSession:
    return SageMakerBatchSession(
        "kokoro-standin",
        region=REGION,
        endpoint_url=endpoint_url,
        botocore_session=dummy_botocore_session(),
        **options,
    )


async def collect_until(
    events: AsyncIterator[SessionEvent], done: Callable[[list[SessionEvent]], bool]
) -> list[SessionEvent]:
    seen: list[SessionEvent] = []
    async with asyncio.timeout(120):
        async for event in events:
            seen.append(event)
            if done(seen):
                break
    return seen


def completed(n: int) -> Callable[[list[SessionEvent]], bool]:
    return lambda seen: sum(isinstance(e, SynthesisCompleted | ServerError) for e in seen) >= n


def audio_of(events: list[SessionEvent], request_id: str) -> bytes:
    return b"".join(e.pcm for e in events if isinstance(e, AudioData) and e.request_id == request_id)


def assert_whole_request(events: list[SessionEvent], request_id: str) -> None:
    """Start, audio, complete in that order; the audio received is exactly what was reported."""
    mine = [e for e in events if getattr(e, "request_id", None) == request_id]
    assert isinstance(mine[0], SynthesisStarted)
    assert isinstance(mine[-1], SynthesisCompleted)
    assert all(isinstance(e, AudioData | WordTimings) for e in mine[1:-1])
    assert any(isinstance(e, AudioData) for e in mine)
    pcm = audio_of(events, request_id)
    assert len(pcm) % SAMPLE_WIDTH_BYTES == 0
    expected_ms = len(pcm) / SAMPLE_WIDTH_BYTES / mine[0].sample_rate * 1000
    assert abs(mine[-1].audio_ms - expected_ms) < 1.0


async def test_requests_complete_in_order_through_real_boto3(standin: SageMakerResponseStreamServer) -> None:
    async with open_batch(standin.url) as session:
        await session.send(SynthesizeRequest("Hello there.", request_id="r1"))
        await session.send(SynthesizeRequest("How are you today?", request_id="r2", sample_rate=16_000))
        await session.send(
            SynthesizeRequest("How are you today?", request_id="r3", sample_rate=16_000, speed=2.0)
        )
        events = await collect_until(session.events(), completed(3))
    for request_id in ("r1", "r2", "r3"):
        assert_whole_request(events, request_id)
    order = [e.request_id for e in events if isinstance(e, SynthesisStarted | SynthesisCompleted)]
    assert order == ["r1", "r1", "r2", "r2", "r3", "r3"]
    rates = {e.request_id: e.sample_rate for e in events if isinstance(e, SynthesisStarted)}
    assert rates == {"r1": 24_000, "r2": 16_000, "r3": 16_000}
    assert 0 < len(audio_of(events, "r3")) < 0.8 * len(audio_of(events, "r2"))  # the speed reached it
    assert standin.endpoint_names == ["kokoro-standin"] * 3
    assert standin.access_keys == [ACCESS_KEY] * 3


async def test_payload_parts_split_at_every_offset_give_the_same_audio(
    standin: SageMakerResponseStreamServer,
) -> None:
    """One-byte parts: every offset of the real response is a part boundary (mid event, mid character)."""
    request = SynthesizeRequest("Hi.", request_id="split", sample_rate=8_000)
    async with open_batch(standin.url) as session:
        whole = await collect_until(_one(session, request), completed(1))
        standin.part_size = 1
        parts_before = standin.parts_sent
        split = await collect_until(_one(session, request), completed(1))
    assert standin.parts_sent - parts_before > 1000  # really one byte per part
    assert_whole_request(split, "split")
    assert audio_of(split, "split") == audio_of(whole, "split")


async def _one(session: SageMakerBatchSession, request: SynthesizeRequest) -> AsyncIterator[SessionEvent]:
    await session.send(request)
    async for event in session.events():
        yield event
        if isinstance(event, SynthesisCompleted | ServerError):
            return


def test_reassembly_at_every_two_part_split_of_a_real_response(model_server: Any) -> None:
    """Unit check of the reassembly on real bytes: cut one real response in two at every offset."""
    body = {"text": "Hi.", "sample_rate": 8_000, "format": "sse"}
    sse = httpx.post(f"{model_server.http_url}/invocations", json=body, timeout=60).content
    assert len(sse) > 1000
    sse_whole = list(sse_payloads(httpx.ByteStream(sse)))
    assert sse_whole[0].startswith('{"type":"synthesis_start"')
    for offset in range(1, len(sse)):
        assert list(sse_payloads(_Parts(sse[:offset], sse[offset:]))) == sse_whole, offset


class _Parts(httpx.SyncByteStream):
    def __init__(self, *parts: bytes) -> None:
        self._parts = parts

    def __iter__(self) -> Iterator[bytes]:
        yield from self._parts


async def test_bad_request_is_a_coded_error_and_the_session_goes_on(
    standin: SageMakerResponseStreamServer,
) -> None:
    async with open_batch(standin.url) as session:
        await session.send(SynthesizeRequest("Hello.", request_id="bad", voice="no_such_voice"))
        await session.send(SynthesizeRequest("Still here.", request_id="good"))
        events = await collect_until(session.events(), completed(2))
    errors = [e for e in events if isinstance(e, ServerError)]
    assert [(e.request_id, e.code) for e in errors] == [("bad", "unknown_voice")]
    assert_whole_request(events, "good")


async def test_model_stream_error_fails_the_request_with_a_code_and_the_session_goes_on(
    standin: SageMakerResponseStreamServer,
) -> None:
    async with open_batch(standin.url) as session:
        standin.break_after = 2
        await session.send(SynthesizeRequest("This stream will break after two parts.", request_id="broken"))
        broken = await collect_until(session.events(), completed(1))
        standin.break_after = None
        await session.send(SynthesizeRequest("Back again.", request_id="after"))
        after = await collect_until(session.events(), completed(1))
    error = broken[-1]
    assert isinstance(error, ServerError) and error.request_id == "broken"
    assert error.code == "model_stream_error" and "the model closed the stream" in error.message
    assert not any(isinstance(e, SynthesisCompleted) for e in broken)
    assert_whole_request(after, "after")


async def test_cancel_drops_queued_and_in_flight_requests(standin: SageMakerResponseStreamServer) -> None:
    async with open_batch(standin.url) as session:
        await session.send(
            SynthesizeRequest("One. Two. Three. Four. Five. Six. Seven. Eight. Nine. Ten.", request_id="long")
        )
        await session.send(SynthesizeRequest("Never spoken.", request_id="queued"))
        events = session.events()
        first = await collect_until(events, lambda seen: isinstance(seen[-1], AudioData))
        await session.cancel()
        rest = await collect_until(events, lambda seen: isinstance(seen[-1], Cancelled))
        await session.send(SynthesizeRequest("Back again.", request_id="after"))
        after = await collect_until(events, completed(1))
    assert isinstance(first[0], SynthesisStarted)
    assert rest[-1] == Cancelled(2)
    assert not any(isinstance(e, SynthesisCompleted) for e in rest)
    assert not any(getattr(e, "request_id", None) == "queued" for e in rest + after)
    assert_whole_request(after, "after")


async def test_endpoint_down_is_a_coded_session_error() -> None:
    async with open_batch("http://127.0.0.1:9") as session:
        await session.send(SynthesizeRequest("Nobody listens.", request_id="r1"))
        with pytest.raises(SageMakerError) as caught:
            await collect_until(session.events(), completed(1))
    assert isinstance(caught.value, SessionClosedError)
    assert caught.value.code == "connection_failed"


async def test_close_lets_the_consumer_finish_what_was_sent(standin: SageMakerResponseStreamServer) -> None:
    session = open_batch(standin.url)
    await session.__aenter__()  # closed by session.close() below
    seen: list[SessionEvent] = []

    async def consume() -> None:
        async for event in session.events():
            seen.append(event)

    async with asyncio.TaskGroup() as tg:
        tg.create_task(consume())
        await session.send(SynthesizeRequest("The first sentence is here.", request_id="a"))
        await session.send(SynthesizeRequest("And a second one follows it.", request_id="b"))
        await session.close()  # the consumer ends after both requests
    assert_whole_request(seen, "a")
    assert_whole_request(seen, "b")


def test_open_session_picks_the_batch_session_from_the_endpoint_string() -> None:
    session = open_session("sagemaker-batch:kokoro-tts?region=eu-west-1")
    assert isinstance(session, SageMakerBatchSession)
    assert (session.endpoint_name, session.region) == ("kokoro-tts", "eu-west-1")
