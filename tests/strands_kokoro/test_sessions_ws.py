"""The WebSocket session: the shared contract against the REAL model server, plus frame classification."""

from __future__ import annotations

import json

import pytest

from strands_kokoro.protocol import (
    AudioData,
    Cancelled,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
)
from strands_kokoro.sessions import EndpointError, open_session
from strands_kokoro.sessions.base import FrameDecoder
from strands_kokoro.sessions.http import HttpSession
from strands_kokoro.sessions.ws import WebSocketSession, websocket_url
from tests.model_server_process import RunningServer, free_port
from tests.strands_kokoro.session_contract import SessionContract, SessionFactory


class TestWebSocketSessionContract(SessionContract):
    @pytest.fixture
    def session_factory(self, model_server: RunningServer) -> SessionFactory:
        return lambda: open_session(model_server.ws_url)

    @pytest.fixture
    def dead_session_factory(self) -> SessionFactory:
        return lambda: open_session(f"ws://127.0.0.1:{free_port()}", open_timeout=5.0)


# ------------------------------------------------------------------------------ frame classification


def test_pcm_that_begins_with_a_brace_is_audio() -> None:
    decoder = FrameDecoder()
    assert isinstance(decoder.decode(SynthesisStarted("r1", 24_000).to_wire().encode()), SynthesisStarted)
    pcm = b"{" + bytes(range(1, 200)) + b"}"  # starts AND ends like JSON, but is not
    assert decoder.decode(pcm) == AudioData("r1", pcm)
    pcm_like_text = b'{"type": "synthesis_complete", '  # a JSON prefix, not a whole object
    assert decoder.decode(pcm_like_text) == AudioData("r1", pcm_like_text)
    assert decoder.decode(b"{\xff\xfe}") == AudioData("r1", b"{\xff\xfe}")  # not UTF-8


def test_a_whole_json_object_in_a_binary_frame_is_control() -> None:
    """SageMaker's router re-wraps every server frame as bytes: control frames arrive binary too."""
    decoder = FrameDecoder()
    decoder.decode(SynthesisStarted("r1", 16_000).to_wire().encode())
    frame = (
        SynthesisCompleted("r1", audio_ms=10.0, chunks=1, first_audio_ms=5.0, elapsed_ms=12.0)
        .to_wire()
        .encode()
    )
    event = decoder.decode(frame)
    assert isinstance(event, SynthesisCompleted) and event.request_id == "r1" and event.audio_ms == 10.0
    assert decoder.current_request_id is None


def test_audio_outside_a_request_and_unknown_frames_are_dropped() -> None:
    decoder = FrameDecoder()
    assert decoder.decode(b"\x00\x01\x02\x03") is None  # no synthesis_start yet: belongs to nobody
    assert decoder.decode(json.dumps({"type": "something_new"})) is None  # forward compatible
    assert decoder.decode("not json at all") is None  # a text frame is never audio
    assert decoder.decode(json.dumps([1, 2])) is None  # JSON, but not an object


def test_error_and_cancelled_frames() -> None:
    decoder = FrameDecoder()
    decoder.decode(SynthesisStarted("r1", 24_000).to_wire())
    error = decoder.decode(
        json.dumps({"type": "error", "request_id": "r1", "code": "engine_failed", "message": "x"})
    )
    assert error == ServerError("r1", "engine_failed", "x")
    assert decoder.decode(b"\x00\x00") is None  # the failed request's audio is over
    assert decoder.decode(json.dumps({"type": "cancelled", "dropped": 2})) == Cancelled(2)


# ------------------------------------------------------------------------------ choosing a session


def test_open_session_picks_the_transport_by_scheme() -> None:
    ws = open_session("ws://127.0.0.1:8080")
    assert (
        isinstance(ws, WebSocketSession) and ws.url == "ws://127.0.0.1:8080/invocations-bidirectional-stream"
    )
    assert isinstance(open_session("wss://example.com/"), WebSocketSession)
    http = open_session("http://127.0.0.1:8080")
    assert isinstance(http, HttpSession) and http.url == "http://127.0.0.1:8080/invocations"
    assert (
        websocket_url("ws://h:1/invocations-bidirectional-stream")
        == "ws://h:1/invocations-bidirectional-stream"
    )


@pytest.mark.parametrize("endpoint", ["ftp://host", "127.0.0.1:8080", "", "sagemakr:x"])
def test_unknown_scheme_is_a_coded_error(endpoint: str) -> None:
    with pytest.raises(EndpointError) as info:
        open_session(endpoint)
    assert info.value.code == "unknown_endpoint_scheme"
    assert "ws://" in info.value.message


@pytest.mark.parametrize("endpoint", ["ws://", "wss:///path", "http://", "https://:8080"])
def test_an_address_without_a_host_is_a_bad_endpoint_not_a_reconnect(endpoint: str) -> None:
    with pytest.raises(EndpointError) as info:
        open_session(endpoint)
    assert info.value.code == "bad_endpoint"


def test_sagemaker_endpoint_without_a_name_is_a_coded_error() -> None:
    with pytest.raises(EndpointError) as info:
        open_session("sagemaker:?region=us-east-1")
    assert info.value.code == "bad_endpoint"


def test_sagemaker_endpoints_are_opened_lazily_with_their_query() -> None:
    pytest.importorskip("strands_kokoro.sessions.sagemaker")
    bidi = open_session("sagemaker:my-endpoint?region=us-west-2")
    assert type(bidi).__name__ == "SageMakerBidiSession"
    assert getattr(bidi, "endpoint_name", None) == "my-endpoint"
    batch = open_session("sagemaker-batch:my-endpoint?region=us-west-2")
    assert type(batch).__name__ == "SageMakerBatchSession"
