"""The SageMaker bidirectional session, through the REAL HTTP/2 SDK and our REAL model server.

The SDK talks to :class:`SageMakerBidiRouter` (a transport standing in for SageMaker's router, see
``standins/``), which bridges to the model server's WebSocket: the SDK's request building, SigV4
signing and event-stream coding all run, and the audio is Kokoro's.
"""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import botocore.credentials
import botocore.session
import pytest

from strands_kokoro.protocol import (
    SAMPLE_WIDTH_BYTES,
    AudioData,
    Cancelled,
    ServerError,
    SessionStarted,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    WordTimings,
)
from strands_kokoro.sessions import open_session
from strands_kokoro.sessions.aws_credentials import BotocoreCredentialsResolver, SageMakerError
from strands_kokoro.sessions.base import SessionClosedError, SessionEvent
from strands_kokoro.sessions.sagemaker import SageMakerBidiSession
from tests.model_server_process import RunningServer, free_port
from tests.strands_kokoro.session_contract import SessionContract, SessionFactory
from tests.strands_kokoro.standins.sagemaker_bidi_router import SageMakerBidiRouter
from tests.strands_kokoro.standins.scripted_model_server import scripted_model_server

pytestmark = pytest.mark.anyio

REGION = "us-east-1"
ACCESS_KEY = "AKIDSTANDIN"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def dummy_botocore_session(access_key: str = ACCESS_KEY) -> botocore.session.Session:
    """Static dummy credentials: the stand-in checks the signature's shape, AWS never sees it."""
    session = botocore.session.Session()
    session.set_credentials(access_key, "standin-secret")
    session.set_config_variable("region", REGION)
    return session


def open_bidi(router: SageMakerBidiRouter, **options: Any) -> SageMakerBidiSession:
    return SageMakerBidiSession(
        "kokoro-standin",
        region=REGION,
        botocore_session=dummy_botocore_session(),
        transport=router,
        **options,
    )


ROUTER_MODES: dict[str, dict[str, Any]] = {
    # What SageMaker's bidi contract describes: DataType on every part, frames fragmented into
    # PARTIAL ... COMPLETE parts (three here, so every control frame arrives cut).
    "split_parts_with_headers": {"split_into": 3},
    # No DataType/CompletionState at all: the whole-JSON-object content rule is all the client has.
    "whole_parts_without_headers": {"part_headers": False},
}


class TestSageMakerBidiSessionContract(SessionContract):
    """The suite every session passes, here through the real SDK, the router stand-in and the real server.

    The router splits every frame into PARTIAL parts carrying ``DataType``: what the session must
    reassemble and classify by header, the more demanding of the two forms. Bare parts (the content-rule
    fallback) get the real server in ``test_sentences_arrive_in_order_through_the_real_sdk`` and the
    brace-PCM case below.
    """

    @pytest.fixture
    async def router(self, model_server: RunningServer) -> AsyncIterator[SageMakerBidiRouter]:
        async with SageMakerBidiRouter(
            model_server.ws_url, **ROUTER_MODES["split_parts_with_headers"]
        ) as router:
            yield router
        if router.log.forwarded_parts:
            assert router.log.partial_parts > 0, "the stand-in was meant to split frames, and did not"

    @pytest.fixture
    def session_factory(self, router: SageMakerBidiRouter) -> SessionFactory:
        return lambda: open_bidi(router)

    @pytest.fixture
    async def dead_session_factory(self) -> AsyncIterator[SessionFactory]:
        async with SageMakerBidiRouter(f"ws://127.0.0.1:{free_port()}") as router:
            yield lambda: open_bidi(router)


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
    """Start, audio, complete in that order; the audio received is exactly what the server reports."""
    mine = [e for e in events if getattr(e, "request_id", None) == request_id]
    assert isinstance(mine[0], SynthesisStarted)
    assert isinstance(mine[-1], SynthesisCompleted)
    assert all(isinstance(e, AudioData | WordTimings) for e in mine[1:-1])
    assert any(isinstance(e, AudioData) for e in mine)
    pcm = audio_of(events, request_id)
    expected_ms = len(pcm) / SAMPLE_WIDTH_BYTES / mine[0].sample_rate * 1000
    assert abs(mine[-1].audio_ms - expected_ms) < 1.0


@pytest.mark.parametrize("mode", list(ROUTER_MODES))
async def test_sentences_arrive_in_order_through_the_real_sdk(model_server: Any, mode: str) -> None:
    async with SageMakerBidiRouter(model_server.ws_url, **ROUTER_MODES[mode]) as router:
        async with open_bidi(router) as session:
            await session.send(SynthesizeRequest("Hello there.", request_id="r1"))
            await session.send(SynthesizeRequest("How are you today?", request_id="r2", sample_rate=16_000))
            events = await collect_until(session.events(), completed(2))
        assert_whole_request(events, "r1")
        assert_whole_request(events, "r2")
        order = [e.request_id for e in events if isinstance(e, SynthesisStarted | SynthesisCompleted)]
        assert order == ["r1", "r1", "r2", "r2"]
        assert (
            next(e for e in events if isinstance(e, SynthesisStarted) and e.request_id == "r2").sample_rate
            == 16_000
        )
        # What SageMaker saw: one signed request, each message one signed event, then the signed end frame.
        assert router.log.endpoint_names == ["kokoro-standin"]
        assert router.log.access_keys == [ACCESS_KEY]
        sent = [json.loads(part) for part in router.log.forwarded_parts]
        assert [m["type"] for m in sent] == ["synthesize", "synthesize", "close"]
        assert len(router.log.chunk_signatures) == len(sent) + 1
        assert len(set(router.log.chunk_signatures)) == len(
            router.log.chunk_signatures
        )  # chained, not reused


async def test_bad_request_is_a_coded_error_and_the_session_goes_on(model_server: Any) -> None:
    async with SageMakerBidiRouter(model_server.ws_url) as router, open_bidi(router) as session:
        await session.send(SynthesizeRequest("Hello.", request_id="bad", voice="no_such_voice"))
        await session.send(SynthesizeRequest("Still here.", request_id="good"))
        events = await collect_until(session.events(), completed(2))
    errors = [e for e in events if isinstance(e, ServerError)]
    assert [(e.request_id, e.code) for e in errors] == [("bad", "unknown_voice")]
    assert_whole_request(events, "good")


async def test_close_keeps_the_input_stream_open_until_the_audio_is_drained(model_server: Any) -> None:
    """close() right after sending: the router hangs up when the input ends, so early close loses audio."""
    async with SageMakerBidiRouter(model_server.ws_url) as router:
        session = open_bidi(router)
        await session.__aenter__()
        seen: list[SessionEvent] = []

        async def consume() -> None:
            async for event in session.events():
                seen.append(event)

        async with asyncio.TaskGroup() as tg:
            tg.create_task(consume())
            await session.send(SynthesizeRequest("The first sentence is here.", request_id="a"))
            await session.send(SynthesizeRequest("And a second one follows it.", request_id="b"))
            await session.close()  # the consumer task ends when the stream does
        assert router.log.input_ended == 1
    assert_whole_request(seen, "a")
    assert_whole_request(seen, "b")


async def test_ending_the_input_early_loses_audio_which_is_why_close_drains(model_server: Any) -> None:
    """Control for the test above: leaving ``async with`` on an error skips the drain, and audio is lost."""
    async with SageMakerBidiRouter(model_server.ws_url) as router:
        with pytest.raises(RuntimeError, match="leave now"):
            async with open_bidi(router) as session:
                consumer = asyncio.ensure_future(collect_until(session.events(), completed(1)))
                await session.send(
                    SynthesizeRequest(
                        "This sentence is long enough to take a while to speak.", request_id="lost"
                    )
                )
                raise RuntimeError("leave now")
        seen = await consumer  # the stream ended when the input did: no error, and no audio
    assert not any(isinstance(e, SynthesisCompleted) for e in seen)


async def test_model_stream_error_is_a_coded_session_error(model_server: Any) -> None:
    async with (
        SageMakerBidiRouter(model_server.ws_url, break_after=2) as router,
        open_bidi(router) as session,
    ):
        await session.send(SynthesizeRequest("This stream will break after two frames.", request_id="r1"))
        with pytest.raises(SageMakerError) as caught:
            await collect_until(session.events(), completed(1))
    assert isinstance(caught.value, SessionClosedError)
    assert caught.value.code == "model_stream_error"
    assert caught.value.aws_code == "StreamBroken"
    assert router.log.streams_broken == 1


async def test_cancel_drops_the_request_and_the_session_goes_on(model_server: Any) -> None:
    async with SageMakerBidiRouter(model_server.ws_url) as router, open_bidi(router) as session:
        await session.send(
            SynthesizeRequest("One. Two. Three. Four. Five. Six. Seven. Eight. Nine. Ten.", request_id="long")
        )
        events = session.events()
        # Cancel while the long request is being spoken: its first audio has arrived.
        first = await collect_until(events, lambda seen: isinstance(seen[-1], AudioData))
        await session.cancel()
        rest = await collect_until(events, lambda seen: isinstance(seen[-1], Cancelled))
        await session.send(SynthesizeRequest("Back again.", request_id="after"))
        after = await collect_until(events, completed(1))
    # The server's first frame (through SageMaker's router too) announces the session.
    assert isinstance(first[0], SessionStarted) and first[0].first_audio_ms
    assert first[1] == SynthesisStarted("long", 24_000)
    # Its words come with the audio that speaks them (a sentence rendered in one piece: before it).
    assert all(isinstance(e, AudioData | WordTimings) and e.request_id == "long" for e in first[2:])
    # The request in flight was dropped (the server says so), it never completed, and only audio of it
    # (already on its way) came before the cancel's answer.
    assert rest[-1] == Cancelled(1)
    assert all(isinstance(e, AudioData | WordTimings) and e.request_id == "long" for e in rest[:-1])
    assert_whole_request(after, "after")
    assert not any(getattr(e, "request_id", None) == "long" for e in after)


async def test_endpoint_down_at_open_is_a_coded_session_error() -> None:
    async with SageMakerBidiRouter("ws://127.0.0.1:9") as router:
        with pytest.raises(SageMakerError) as caught:
            async with open_bidi(router):
                pass
    assert caught.value.code == "connection_failed"


async def test_default_transport_is_crt_http2_and_a_refused_connection_is_coded() -> None:
    """No stand-in: the real CRT client (forced to HTTP/2) against a port nobody listens on."""
    session = SageMakerBidiSession(
        "kokoro-standin",
        region=REGION,
        endpoint_uri=f"https://127.0.0.1:{free_port()}",
        botocore_session=dummy_botocore_session(),
    )
    with pytest.raises(SageMakerError) as caught:
        async with session:
            pass
    assert caught.value.code == "connection_failed"
    assert "AWS_IO_SOCKET_CONNECTION_REFUSED" in caught.value.message


# ------------------------------------------------------------------------- PCM that begins with `{`


@pytest.mark.parametrize("mode", list(ROUTER_MODES))
async def test_pcm_beginning_with_a_brace_is_audio_not_control(mode: str) -> None:
    brace_pcm = [b'{"type": "error"\x00\x80}', b"{\x01\x02}", b'{"a":1}\xff\xfe']
    async with (
        scripted_model_server(brace_pcm) as url,
        SageMakerBidiRouter(url, **ROUTER_MODES[mode]) as router,
        open_bidi(router) as session,
    ):
        await session.send(SynthesizeRequest("Anything.", request_id="brace"))
        events = await collect_until(session.events(), completed(1))
    assert [e.pcm for e in events if isinstance(e, AudioData)] == brace_pcm
    assert not any(isinstance(e, ServerError) for e in events)


# ------------------------------------------------------------------------- endpoint strings, credentials


def test_open_session_picks_the_bidi_session_from_the_endpoint_string() -> None:
    session = open_session("sagemaker:kokoro-tts?region=eu-west-1", drain_timeout_s=5.0)
    assert isinstance(session, SageMakerBidiSession)
    assert (session.endpoint_name, session.region) == ("kokoro-tts", "eu-west-1")


class ScriptedCredentialSource:
    """Test double of an STS/SSO refresh: hands out numbered temporary credentials, one hour each."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.calls = 0

    def __call__(self) -> dict[str, str]:
        self.calls += 1
        expiry = self.clock() + datetime.timedelta(hours=1)
        return {
            "access_key": f"AKIDREFRESHED{self.calls}",
            "secret_key": "secret",
            "token": f"token{self.calls}",
            "expiry_time": expiry.isoformat(),
        }


class ScriptedCredentialProvider(botocore.credentials.CredentialProvider):
    """Test double placed first in botocore's chain, returning the refreshable credentials it is given."""

    METHOD = "scripted"
    CANONICAL_NAME = "Scripted"

    def __init__(self, credentials: botocore.credentials.Credentials) -> None:
        super().__init__()
        self._credentials = credentials

    def load(self) -> botocore.credentials.Credentials:
        return self._credentials


class ManualClock:
    """Test double of botocore's time source, advanced by hand."""

    def __init__(self) -> None:
        self.now = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.now


async def test_credentials_refresh_through_botocore_when_they_expire_with_scripted_source() -> None:
    clock = ManualClock()
    source = ScriptedCredentialSource(clock)
    first = source()
    credentials = botocore.credentials.RefreshableCredentials(
        access_key=first["access_key"],
        secret_key=first["secret_key"],
        token=first["token"],
        expiry_time=datetime.datetime.fromisoformat(first["expiry_time"]),
        refresh_using=source,
        method="scripted",
        time_fetcher=clock,
    )
    session = botocore.session.Session()
    session.get_component("credential_provider").insert_before("env", ScriptedCredentialProvider(credentials))
    resolver = BotocoreCredentialsResolver(session)

    identity = await resolver.get_identity(properties={})
    assert (identity.access_key_id, identity.session_token) == ("AKIDREFRESHED1", "token1")
    clock.now += datetime.timedelta(minutes=30)  # still valid: cached, no refresh
    assert (await resolver.get_identity(properties={})) is identity
    assert source.calls == 1
    clock.now += datetime.timedelta(minutes=29)  # inside botocore's refresh window
    refreshed = await resolver.get_identity(properties={})
    assert (refreshed.access_key_id, refreshed.session_token) == ("AKIDREFRESHED2", "token2")
    assert source.calls == 2


async def test_no_credentials_is_a_coded_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    session = botocore.session.Session()
    with pytest.raises(SageMakerError) as caught:
        await BotocoreCredentialsResolver(session).get_identity(properties={})
    assert caught.value.code == "no_credentials"
