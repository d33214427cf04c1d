"""The wire protocol module both ends share (architecture §3): every message built and parsed here."""

from __future__ import annotations

import json
import struct

import pytest

from strands_kokoro import protocol
from strands_kokoro.protocol import (
    AudioData,
    Cancel,
    Cancelled,
    Close,
    ErrorCode,
    Invocation,
    ProtocolError,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    WordTimings,
)


def code_of(payload: bytes | str) -> ErrorCode:
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(payload)
    return info.value.code


def test_synthesize_from_text_and_binary_frames_is_the_same() -> None:
    msg = {"type": "synthesize", "text": "Hello.", "request_id": "r1", "voice": "bf_emma", "speed": 1.2}
    as_text = protocol.parse_client_message(json.dumps(msg))
    as_bytes = protocol.parse_client_message(json.dumps(msg).encode())
    assert (
        as_text == as_bytes == SynthesizeRequest(text="Hello.", request_id="r1", voice="bf_emma", speed=1.2)
    )


def test_text_without_type_is_synthesize_like_the_aws_sample() -> None:
    parsed = protocol.parse_client_message(b'{"text": "Hi there."}')
    assert isinstance(parsed, SynthesizeRequest)
    assert parsed.text == "Hi there."
    assert parsed.voice == protocol.DEFAULT_VOICE
    assert parsed.sample_rate == protocol.DEFAULT_SAMPLE_RATE


def test_a_leading_byte_order_mark_is_ignored_on_text_and_binary_frames_and_posts() -> None:
    msg = json.dumps({"text": "Hi.", "request_id": "r1"})
    plain = protocol.parse_client_message(msg)
    assert protocol.parse_client_message("\ufeff" + msg) == plain
    assert protocol.parse_client_message(b"\xef\xbb\xbf" + msg.encode()) == plain
    assert protocol.parse_invocation(b"\xef\xbb\xbf" + msg.encode()).request == plain
    assert code_of("\ufeff\ufeff" + msg) == ErrorCode.BAD_JSON  # one mark, not any number of them


def test_a_request_without_lang_leaves_it_to_the_voice_and_does_not_send_one() -> None:
    parsed = protocol.parse_client_message(b'{"text": "Bonjour.", "voice": "ff_siwis"}')
    assert isinstance(parsed, SynthesizeRequest) and parsed.lang is None
    assert "lang" not in json.loads(SynthesizeRequest("Bonjour.", voice="ff_siwis").to_wire())
    assert protocol.parse_client_message(b'{"text": "Hi.", "lang": ""}') == SynthesizeRequest("Hi.")


def test_every_client_message_round_trips() -> None:
    request = SynthesizeRequest(
        "Hi.", request_id="r1", voice="am_michael", speed=0.8, sample_rate=16_000, lang="en-gb"
    )
    assert protocol.parse_client_message(request.to_wire()) == request
    assert protocol.parse_client_message(request.to_wire().encode()) == request
    assert protocol.parse_client_message(Cancel().to_wire()) == Cancel()
    assert protocol.parse_client_message(Close().to_wire().encode()) == Close()
    without_id = SynthesizeRequest("Hi.")
    assert "request_id" not in json.loads(without_id.to_wire())
    assert protocol.parse_client_message(without_id.to_wire()) == without_id


def test_an_invocation_body_round_trips_with_its_format() -> None:
    invocation = Invocation(SynthesizeRequest("Hi.", request_id="r2", sample_rate=8_000), "sse")
    assert protocol.parse_invocation(invocation.to_body()) == invocation
    parsed = protocol.parse_invocation(b'{"text": "Hi.", "format": "wav"}')
    assert parsed.format == "wav" and parsed.request.text == "Hi."
    assert protocol.parse_invocation(b'{"text": "Hi."}').format == "pcm"
    with pytest.raises(ProtocolError) as info:
        protocol.parse_invocation(b'{"text": "Hi.", "format": "flac"}')
    assert info.value.code == ErrorCode.BAD_FORMAT


@pytest.mark.parametrize("fmt", ["opus", "mp3"])
def test_a_compressed_invocation_names_its_audio_on_the_request(fmt: str) -> None:
    parsed = protocol.parse_invocation(json.dumps({"text": "Hi.", "format": fmt}).encode())
    assert parsed.format == fmt and parsed.request.format == fmt
    assert protocol.parse_invocation(parsed.to_body()) == parsed
    assert protocol.parse_invocation(b'{"text": "Hi.", "format": "sse"}').request.format == "pcm"


def test_a_synthesize_request_carries_its_audio_format_only_when_compressed() -> None:
    """Older servers ignore ``format`` (and answer PCM, which their ``synthesis_start`` says)."""
    assert "format" not in json.loads(SynthesizeRequest("Hi.").to_wire())
    opus = SynthesizeRequest("Hi.", request_id="r1", format="opus")
    assert json.loads(opus.to_wire())["format"] == "opus"
    assert protocol.parse_client_message(opus.to_wire()) == opus
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message('{"text": "Hi.", "format": "ogg", "request_id": "r9"}')
    assert info.value.code == ErrorCode.BAD_FORMAT and info.value.request_id == "r9"
    started = SynthesisStarted("r1", 24_000, format="opus")
    assert protocol.parse_control(json.loads(started.to_wire())) == started
    assert protocol.parse_control({"type": "synthesis_start", "request_id": "r1"}) == SynthesisStarted("r1")


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"\xff\xfe\x00", ErrorCode.BAD_UTF8),
        (b"{not json", ErrorCode.BAD_JSON),
        (b"[1, 2]", ErrorCode.BAD_MESSAGE),
        (b'{"type": "synthesize"}', ErrorCode.MISSING_TEXT),
        (b'{"type": "synthesize", "text": "   "}', ErrorCode.MISSING_TEXT),
        (b'{"type": "synthesize", "text": 5}', ErrorCode.BAD_MESSAGE),
        (b'{"type": "synthesize", "text": "hi", "speed": 0}', ErrorCode.BAD_SPEED),
        (b'{"type": "synthesize", "text": "hi", "speed": 100}', ErrorCode.BAD_SPEED),
        (b'{"type": "synthesize", "text": "hi", "speed": "fast"}', ErrorCode.BAD_SPEED),
        (b'{"type": "synthesize", "text": "hi", "speed": NaN}', ErrorCode.BAD_SPEED),
        (b'{"type": "synthesize", "text": "hi", "sample_rate": 11}', ErrorCode.BAD_SAMPLE_RATE),
        (b'{"type": "synthesize", "text": "hi", "voice": 3}', ErrorCode.BAD_MESSAGE),
        (b'{"type": "synthesize", "text": "hi", "request_id": 7}', ErrorCode.BAD_MESSAGE),
        (b'{"type": "synthesize", "text": "hi", "request_id": ""}', ErrorCode.BAD_MESSAGE),  # was replaced
        (b'{"type": "dance"}', ErrorCode.UNKNOWN_TYPE),
        (b'{"hello": "world"}', ErrorCode.MISSING_TEXT),
    ],
)
def test_bad_messages_get_stable_codes(payload: bytes, code: ErrorCode) -> None:
    assert code_of(payload) == code


def test_a_json_integer_of_thousands_of_digits_is_bad_json_not_a_crash() -> None:
    """Python refuses to parse ints over 4,300 digits with a ValueError that is not a JSONDecodeError."""
    huge = b'{"type": "synthesize", "text": "hi", "speed": 1' + b"0" * 5000 + b"}"
    assert code_of(huge) == ErrorCode.BAD_JSON
    assert protocol.control_object(huge) is None  # the client side: not a control frame, no crash
    deep = b'{"text": "hi", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert code_of(deep[: protocol.MAX_MESSAGE_BYTES]) in {ErrorCode.BAD_JSON, ErrorCode.MESSAGE_TOO_LARGE}


def test_missing_text_message_is_not_a_bare_key_name() -> None:
    """The seed's trap: str(KeyError('text')) is "'text'", which reads like a field, not an error."""
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(b'{"type": "synthesize"}')
    assert info.value.message != "'text'"
    assert "required" in info.value.message


def test_limits() -> None:
    too_long = json.dumps({"text": "a" * (protocol.MAX_TEXT_CHARS + 1)})
    assert code_of(too_long) == ErrorCode.TEXT_TOO_LONG
    too_big = b'{"text": "' + b"a" * protocol.MAX_MESSAGE_BYTES + b'"}'
    assert code_of(too_big) == ErrorCode.MESSAGE_TOO_LARGE


def test_errors_never_echo_more_than_a_short_prefix_of_what_the_client_sent() -> None:
    long_id = "x" * 60_000
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(json.dumps({"text": "hi", "request_id": long_id}))
    assert info.value.code == ErrorCode.BAD_MESSAGE and info.value.request_id is None
    assert len(info.value.frame().to_wire()) < 300
    rates = list(range(5_000))
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(json.dumps({"text": "hi", "sample_rate": rates}))
    assert info.value.code == ErrorCode.BAD_SAMPLE_RATE and len(info.value.message) < 200
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(json.dumps({"type": "t" * 5_000, "request_id": "y" * 50_000}))
    assert info.value.code == ErrorCode.UNKNOWN_TYPE and len(info.value.frame().to_wire()) < 300


def test_a_lone_surrogate_in_the_text_is_refused_under_the_requests_own_id() -> None:
    with pytest.raises(ProtocolError) as refused:
        protocol.parse_client_message('{"type": "synthesize", "request_id": "e4", "text": "\\ud800Hello."}')
    assert (refused.value.code, refused.value.request_id) == (ErrorCode.BAD_UTF8, "e4")
    with pytest.raises(ProtocolError) as unnamed:  # an id no frame could carry is not echoed
        protocol.parse_client_message('{"request_id": "\\udc00", "text": "Hello."}')
    assert (unnamed.value.code, unnamed.value.request_id) == (ErrorCode.BAD_UTF8, None)


def test_request_id_is_kept_on_field_errors() -> None:
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(b'{"text": "hi", "request_id": "r9", "speed": 9}')
    assert info.value.request_id == "r9"
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(b'{"type": "dance", "request_id": "r10"}')
    assert info.value.request_id == "r10"


def test_control_object_needs_the_whole_payload_to_be_a_json_object() -> None:
    start = SynthesisStarted("r1", 24_000).to_wire()
    assert protocol.control_object(start) == json.loads(start)
    assert protocol.control_object(start.encode()) == json.loads(start)
    # PCM that happens to begin with '{' (0x7b) is audio.
    pcm = b"{" + struct.pack("<4h", 1, -2, 300, -32768)
    assert protocol.control_object(pcm) is None
    # PCM that begins with '{' and ends with '}' but is not JSON is audio too.
    assert protocol.control_object(b"{\x00\x01}") is None
    # A JSON array or a number is not a control frame.
    assert protocol.control_object(b"[1]") is None
    assert protocol.control_object("42") is None


def test_every_server_frame_round_trips() -> None:
    frames = [
        SynthesisStarted("r1", 16_000),
        WordTimings("r1", (protocol.Word("Hello", 12.5, 340.0), protocol.Word("there", 340.0, 610.5))),
        SynthesisCompleted("r1", audio_ms=1000.0, chunks=3, first_audio_ms=12.5, elapsed_ms=40.0),
        SynthesisCompleted("r1", audio_ms=0.0, chunks=0, first_audio_ms=None, elapsed_ms=1.0),
        ServerError("r2", ErrorCode.OVERLOADED, "queue full"),
        ServerError(None, ErrorCode.BAD_JSON, "not JSON"),
        Cancelled(3),
    ]
    for frame in frames:
        obj = protocol.control_object(frame.to_wire().encode())
        assert obj is not None and protocol.parse_control(obj) == frame
    assert json.loads(frames[4].to_wire()) == {
        "type": "error",
        "request_id": "r2",
        "code": "overloaded",
        "message": "queue full",
    }
    assert protocol.parse_control({"type": "something_new"}) is None  # a newer server's frame
    # A number no float holds (JSON allows 400 digits) is read as absent, not raised on.
    huge = {"type": "synthesis_complete", "request_id": "r1", "audio_ms": int("1" * 400), "chunks": 1}
    completed = protocol.parse_control(huge)
    assert isinstance(completed, SynthesisCompleted) and completed.audio_ms == 0.0
    assert protocol.audio_ms(48_000, 24_000) == 1000.0


def test_sse_events_carry_each_frame_and_base64_audio() -> None:
    event = protocol.sse_event(AudioData("r1", b"\x01\x02").to_dict(seq=0, sample_rate=24_000))
    assert event.startswith(b"data: ") and event.endswith(b"\n\n")
    assert b"\n" not in event[:-2]
    data = event[6:-2].decode()
    assert json.loads(data)["audio"] == "AQI="
    assert protocol.parse_sse_data(data, request_id="other") == AudioData("r1", b"\x01\x02")
    start = protocol.sse_event(SynthesisStarted("r1").to_dict())[6:-2].decode()
    assert protocol.parse_sse_data(start, request_id="r1") == SynthesisStarted("r1")
    with pytest.raises(ValueError, match="base64"):
        protocol.parse_sse_data('{"type": "audio", "audio": "%%%"}', request_id="r1")


def test_a_refused_post_reads_as_the_servers_coded_error() -> None:
    body = ServerError("r1", ErrorCode.UNKNOWN_VOICE, "unknown voice 'x'").to_wire().encode()
    assert protocol.parse_error_body(body, request_id="r1", status=400) == ServerError(
        "r1", "unknown_voice", "unknown voice 'x'"
    )
    plain = protocol.parse_error_body(b"<html>Bad Gateway</html>", request_id="r1", status=502)
    assert plain == ServerError("r1", "http_502", "the server answered HTTP 502")


def test_speed_is_validated_once_for_everyone() -> None:
    assert protocol.parse_speed(None) == 1.0 and protocol.parse_speed(2) == 2.0
    for bad in (0.1, True, "1", float("inf"), int("1" * 400)):  # JSON's 400 digits overflow a float
        with pytest.raises(ProtocolError) as info:
            protocol.parse_speed(bad)
        assert info.value.code == ErrorCode.BAD_SPEED
