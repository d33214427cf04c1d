"""How the bidi session reads SageMaker response parts: joined by ``CompletionState``, typed by ``DataType``.

SageMaker's bidi contract: every ``PayloadPart`` may carry ``DataType`` (``UTF8``/``BINARY``) and
``CompletionState`` (``PARTIAL``/``COMPLETE``; absent means complete), and fragments are passed through
as-is. So a control frame may arrive cut in pieces that are not JSON on their own, and an audio frame may
happen to be a valid JSON object. The first half tests the pieces directly; the second half runs the real
SDK against the router stand-in, which splits frames and sets the headers the way SageMaker does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import botocore.session
import pytest
from aws_sdk_sagemaker_runtime_http2.models import ResponsePayloadPart

from strands_kokoro.protocol import (
    AudioData,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
)
from strands_kokoro.sessions.aws_credentials import SageMakerError
from strands_kokoro.sessions.base import FrameDecoder, SessionClosedError, SessionEvent
from strands_kokoro.sessions.sagemaker import (
    PartAssembler,
    ResponseFrame,
    SageMakerBidiSession,
    event_from_frame,
)
from tests.strands_kokoro.standins.sagemaker_bidi_router import SageMakerBidiRouter, split_frame
from tests.strands_kokoro.standins.scripted_model_server import scripted_model_server

pytestmark = pytest.mark.anyio

REGION = "us-east-1"
START = SynthesisStarted("r1", 24_000).to_wire().encode()
JSON_LOOKING_PCM = b'{"type":"error"}'
"""16 bytes = 8 valid s16le samples that also parse as a JSON object: an ``error`` frame by content."""
MISREAD_AS_ERROR = ServerError(None, "unknown_error", "")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def part(data: bytes, data_type: str | None = None, state: str | None = None) -> ResponsePayloadPart:
    return ResponsePayloadPart(bytes_=data, data_type=data_type, completion_state=state)


def json_object_or_none(data: bytes) -> Any:
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def decoder_inside_request() -> FrameDecoder:
    """A decoder that has seen ``synthesis_start`` for r1, so audio now belongs to r1."""
    decoder = FrameDecoder()
    assert event_from_frame(ResponseFrame(START, "UTF8"), decoder) == SynthesisStarted("r1", 24_000)
    return decoder


# ------------------------------------------------------------------------------- reassembly, no network


def test_a_json_control_frame_split_in_three_parts_is_one_control_event() -> None:
    pieces = split_frame(START, 3)
    assert len(pieces) == 3 and all(json_object_or_none(p) is None for p in pieces)  # none is JSON alone
    assembler = PartAssembler()
    assert assembler.add(part(pieces[0], "UTF8", "PARTIAL")) is None
    assert assembler.pending
    assert assembler.add(part(pieces[1], "UTF8", "PARTIAL")) is None
    frame = assembler.add(part(pieces[2], "UTF8", "COMPLETE"))
    assert frame == ResponseFrame(START, "UTF8")
    assert not assembler.pending
    assert event_from_frame(frame, FrameDecoder()) == SynthesisStarted("r1", 24_000)


def test_a_binary_frame_that_parses_as_json_is_audio() -> None:
    decoder = decoder_inside_request()
    assert event_from_frame(ResponseFrame(JSON_LOOKING_PCM, "BINARY"), decoder) == AudioData(
        "r1", JSON_LOOKING_PCM
    )


def test_without_data_type_the_content_rule_decides() -> None:
    """The fallback: the same JSON-looking bytes are a control frame, other bytes are audio."""
    decoder = decoder_inside_request()
    assert event_from_frame(ResponseFrame(JSON_LOOKING_PCM, None), decoder) == MISREAD_AS_ERROR
    assert event_from_frame(ResponseFrame(b"{\x01\x02}", None), decoder) == AudioData("r1", b"{\x01\x02}")


def test_a_part_without_completion_state_is_a_whole_frame() -> None:
    assembler = PartAssembler()
    assert assembler.add(part(START, "UTF8")) == ResponseFrame(START, "UTF8")
    assert assembler.add(part(b"\x01\x02")) == ResponseFrame(b"\x01\x02", None)


def test_binary_parts_are_joined_in_order_and_headers_are_case_insensitive() -> None:
    assembler = PartAssembler()
    assert assembler.add(part(b"\x01\x02", "binary", "partial")) is None
    assert assembler.add(part(b"", "BINARY", "PARTIAL")) is None  # an empty fragment is harmless
    assert assembler.add(part(b"\x03\x04", "BINARY", "complete")) == ResponseFrame(
        b"\x01\x02\x03\x04", "BINARY"
    )


def test_an_unknown_data_type_falls_back_to_the_content_rule() -> None:
    frame = PartAssembler().add(part(START, "TEXT", "COMPLETE"))
    assert frame == ResponseFrame(START, None)
    assert isinstance(event_from_frame(frame, FrameDecoder()), SynthesisStarted)


def test_a_utf8_frame_that_is_not_a_json_object_is_dropped_never_audio() -> None:
    decoder = decoder_inside_request()
    assert event_from_frame(ResponseFrame(b"not json", "UTF8"), decoder) is None
    assert event_from_frame(ResponseFrame(b"\xff\xfe", "UTF8"), decoder) is None
    assert event_from_frame(ResponseFrame(b"[" * 100_000, "UTF8"), decoder) is None  # no RecursionError


def test_binary_audio_outside_a_request_is_dropped() -> None:
    assert event_from_frame(ResponseFrame(b"\x01\x02", "BINARY"), FrameDecoder()) is None


def test_a_frame_past_the_bound_is_a_coded_error_and_the_buffer_is_freed() -> None:
    assembler = PartAssembler(max_frame_bytes=10)
    assert assembler.add(part(b"123456", "BINARY", "PARTIAL")) is None
    with pytest.raises(SageMakerError) as caught:
        assembler.add(part(b"7890A", "BINARY", "PARTIAL"))
    assert caught.value.code == "frame_too_large"
    assert isinstance(caught.value, SessionClosedError)
    assert not assembler.pending
    assert assembler.add(part(b"0123456789", "BINARY")) == ResponseFrame(
        b"0123456789", "BINARY"
    )  # exactly at


# ------------------------------------------------------------------- through the real SDK and the stand-in


def open_bidi(router: SageMakerBidiRouter, **options: Any) -> SageMakerBidiSession:
    """Static dummy credentials: the stand-in checks the signature's shape, AWS never sees it."""
    botocore_session = botocore.session.Session()
    botocore_session.set_credentials("AKIDSTANDIN", "standin-secret")
    return SageMakerBidiSession(
        "kokoro-standin", region=REGION, botocore_session=botocore_session, transport=router, **options
    )


async def speak_once(
    pcm_frames: list[bytes], router_options: dict[str, Any], **session_options: Any
) -> tuple[list[SessionEvent], SageMakerBidiRouter]:
    """One request through the real SDK, the router stand-in and a scripted server; all events until done."""
    async with (
        scripted_model_server(pcm_frames) as url,
        SageMakerBidiRouter(url, **router_options) as router,
        open_bidi(router, **session_options) as session,
    ):
        await session.send(SynthesizeRequest("Anything.", request_id="r1"))
        events = await read_until(session.events(), lambda e: isinstance(e, SynthesisCompleted))
    return events, router


async def read_until(
    events: AsyncIterator[SessionEvent], last: Callable[[SessionEvent], bool]
) -> list[SessionEvent]:
    seen: list[SessionEvent] = []
    async for event in events:
        seen.append(event)
        if last(event):
            break
    return seen


async def test_frames_split_into_partial_parts_arrive_whole() -> None:
    pcm = [bytes(range(256)) * 4, b"\x10\x00\x20\x00"]
    events, router = await speak_once(pcm, {"split_into": 3})
    assert [type(e) for e in events] == [SynthesisStarted, AudioData, AudioData, SynthesisCompleted]
    assert [e.pcm for e in events if isinstance(e, AudioData)] == pcm  # joined, not one event per part
    assert router.log.partial_parts == 2 * (2 + len(pcm))  # start, complete and each audio frame: 3 parts


async def test_binary_pcm_that_parses_as_json_is_audio_when_sagemaker_says_binary() -> None:
    events, _ = await speak_once([JSON_LOOKING_PCM], {"split_into": 2})
    assert [e.pcm for e in events if isinstance(e, AudioData)] == [JSON_LOOKING_PCM]
    assert not any(isinstance(e, ServerError) for e in events)
    assert isinstance(events[-1], SynthesisCompleted)


async def test_without_headers_the_same_pcm_is_misread_which_is_why_the_header_wins() -> None:
    """Control for the test above: the content rule alone takes these audio bytes for an ``error`` frame."""
    events, _ = await speak_once([JSON_LOOKING_PCM], {"part_headers": False})
    assert not any(isinstance(e, AudioData) for e in events)
    assert MISREAD_AS_ERROR in events


async def test_without_headers_the_content_rule_still_reads_control_and_audio() -> None:
    pcm = [b"{\x01\x02}", b"\x00\x01" * 50]
    events, _ = await speak_once(pcm, {"part_headers": False})
    assert [type(e) for e in events] == [SynthesisStarted, AudioData, AudioData, SynthesisCompleted]
    assert [e.pcm for e in events if isinstance(e, AudioData)] == pcm


async def test_a_frame_past_max_frame_bytes_ends_the_session_with_a_coded_error() -> None:
    with pytest.raises(SageMakerError) as caught:
        await speak_once([b"\x00" * 4096], {"split_into": 4}, max_frame_bytes=1024)
    assert caught.value.code == "frame_too_large"
