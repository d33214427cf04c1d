"""The wire protocol module shared by server and client (DESIGN §3)."""

from __future__ import annotations

import json
import struct

import pytest

from strands_kokoro import protocol
from strands_kokoro.protocol import Cancel, Close, ErrorCode, ProtocolError, SynthesizeRequest


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


def test_cancel_and_close() -> None:
    assert protocol.parse_client_message(protocol.CANCEL_MESSAGE) == Cancel()
    assert protocol.parse_client_message(protocol.CLOSE_MESSAGE.encode()) == Close()


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
        (b'{"type": "synthesize", "text": "hi", "sample_rate": 11}', ErrorCode.BAD_SAMPLE_RATE),
        (b'{"type": "synthesize", "text": "hi", "voice": 3}', ErrorCode.BAD_MESSAGE),
        (b'{"type": "dance"}', ErrorCode.UNKNOWN_TYPE),
        (b'{"hello": "world"}', ErrorCode.MISSING_TEXT),
    ],
)
def test_bad_messages_get_stable_codes(payload: bytes, code: ErrorCode) -> None:
    assert code_of(payload) == code


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


def test_request_id_is_kept_on_field_errors() -> None:
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(b'{"text": "hi", "request_id": "r9", "speed": 9}')
    assert info.value.request_id == "r9"


def test_control_frame_needs_the_whole_payload_to_be_a_json_object() -> None:
    start = protocol.synthesis_start("r1", 24_000)
    assert protocol.control_frame(start) == json.loads(start)
    assert protocol.control_frame(start.encode()) == json.loads(start)
    # PCM that happens to begin with '{' (0x7b) is audio.
    pcm = b"{" + struct.pack("<4h", 1, -2, 300, -32768)
    assert protocol.control_frame(pcm) is None
    # PCM that begins with '{' and ends with '}' but is not JSON is audio too.
    assert protocol.control_frame(b"{\x00\x01}") is None
    # A JSON array or a number is not a control frame.
    assert protocol.control_frame(b"[1]") is None
    assert protocol.control_frame("42") is None


def test_server_frames_round_trip() -> None:
    complete = json.loads(
        protocol.synthesis_complete("r1", audio_ms=1000.0, chunks=3, first_audio_ms=12.5, elapsed_ms=40.0)
    )
    assert complete == {
        "type": "synthesis_complete",
        "request_id": "r1",
        "audio_ms": 1000.0,
        "chunks": 3,
        "first_audio_ms": 12.5,
        "elapsed_ms": 40.0,
    }
    error = json.loads(protocol.error_frame(ErrorCode.OVERLOADED, "queue full", "r2"))
    assert error == {"type": "error", "request_id": "r2", "code": "overloaded", "message": "queue full"}
    assert json.loads(protocol.cancelled_frame(3)) == {"type": "cancelled", "dropped": 3}
    assert protocol.audio_ms(48_000, 24_000) == 1000.0


def test_invocation_request_formats() -> None:
    parsed = protocol.parse_invocation_request(b'{"text": "Hi.", "format": "wav"}')
    assert parsed.format == "wav"
    assert parsed.synthesize.text == "Hi."
    with pytest.raises(ProtocolError) as info:
        protocol.parse_invocation_request(b'{"text": "Hi.", "format": "mp3"}')
    assert info.value.code == ErrorCode.BAD_FORMAT


def test_sse_event_is_one_data_line() -> None:
    event = protocol.sse_audio_event("r1", 0, b"\x01\x02", 24_000)
    assert event.startswith(b"data: ") and event.endswith(b"\n\n")
    assert b"\n" not in event[:-2]
    assert json.loads(event[6:])["audio"] == "AQI="
