"""Reading the server's frames on the client side: control frames, SSE events and refusals of a POST.

Why lenient: a newer server may add frames and fields, so an unknown frame is skipped and a missing or
mistyped field gets a neutral default; only the classification rule is strict (a payload is a control
frame only when the WHOLE of it is one JSON object:
:func:`~strands_kokoro.protocol.json_wire.control_object`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from strands_kokoro.protocol.audio_formats import AUDIO_FORMAT, CHANNELS, DEFAULT_SAMPLE_RATE
from strands_kokoro.protocol.errors import http_status_code
from strands_kokoro.protocol.frames import (
    AudioData,
    Cancelled,
    ControlFrame,
    ServerError,
    ServerMessage,
    SessionStarted,
    SynthesisCompleted,
    SynthesisStarted,
    Word,
    WordTimings,
)
from strands_kokoro.protocol.json_wire import control_object, finite_number


def _float(value: Any, default: float = 0.0) -> float:
    number = finite_number(value)
    return default if number is None else number


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _words(value: Any) -> tuple[Word, ...]:
    """Word timings as sent; an entry that is not one is skipped (a newer or broken server)."""
    if not isinstance(value, list):
        return ()
    return tuple(
        Word(item["text"], _float(item.get("start_ms")), _float(item.get("end_ms")))
        for item in value
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    )


def parse_control(obj: Mapping[str, Any]) -> ControlFrame | None:
    """A server control frame from its JSON object; None for a type this client does not know.

    Unknown frames are ignored rather than refused so a newer server can add frames without breaking
    older clients; missing or mistyped fields get neutral defaults for the same reason.
    """
    kind = obj.get("type")
    raw_id = obj.get("request_id")
    request_id = raw_id if isinstance(raw_id, str) else None
    if kind == "synthesis_start" and request_id is not None:
        fmt = obj.get("format")
        return SynthesisStarted(
            request_id,
            _int(obj.get("sample_rate"), DEFAULT_SAMPLE_RATE),
            _int(obj.get("channels"), CHANNELS),
            fmt if isinstance(fmt, str) else AUDIO_FORMAT,
        )
    if kind == "synthesis_complete" and request_id is not None:
        first = obj.get("first_audio_ms")
        return SynthesisCompleted(
            request_id,
            audio_ms=_float(obj.get("audio_ms")),
            chunks=_int(obj.get("chunks"), 0),
            first_audio_ms=_float(first) if first is not None else None,
            elapsed_ms=_float(obj.get("elapsed_ms")),
            words=_words(obj.get("words")),
        )
    if kind == "word_timings" and request_id is not None:
        return WordTimings(request_id, _words(obj.get("words")))
    if kind == "error":
        code, message, retry_after = obj.get("code"), obj.get("message"), obj.get("retry_after_ms")
        return ServerError(
            request_id,
            code if isinstance(code, str) else "unknown_error",
            message if isinstance(message, str) else "",
            max(0, round(ms)) if (ms := finite_number(retry_after)) is not None else None,
        )
    if kind == "cancelled":
        return Cancelled(_int(obj.get("dropped"), 0))
    if kind == "session_start":
        engine, first, rtf = obj.get("engine"), obj.get("first_audio_ms"), obj.get("rtf")
        return SessionStarted(
            engine if isinstance(engine, str) else "",
            _float(first) if first else None,
            _float(rtf) if rtf else None,
        )
    return None


def parse_sse_data(data: str, *, request_id: str) -> ServerMessage | None:
    """One SSE event's ``data`` from POST /invocations?format=sse (``request_id``: the invocation's).

    Raises :class:`ValueError` for an ``audio`` event whose base64 is broken: that stream is corrupt.
    """
    obj = control_object(data)
    if obj is None:
        return None
    if obj.get("type") != "audio":
        return parse_control(obj)
    try:
        pcm = base64.b64decode(str(obj.get("audio", "")), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("an SSE audio event did not carry base64") from None
    raw_id = obj.get("request_id")
    return AudioData(raw_id if isinstance(raw_id, str) else request_id, pcm) if pcm else None


def parse_error_body(body: bytes, *, request_id: str, status: int) -> ServerError:
    """The refusal of a POST (or a SageMaker ``ModelError``'s original message): the server's coded
    error frame, or a code made from the HTTP status when the body is not one."""
    obj = control_object(body)
    if obj is not None and isinstance(obj.get("error"), dict):  # gateways nest it: {"error": {...}}
        obj = {"type": "error", "request_id": obj.get("request_id"), **obj["error"]}
    frame = parse_control(obj) if obj is not None else None
    if isinstance(frame, ServerError):
        return ServerError(frame.request_id or request_id, frame.code, frame.message, frame.retry_after_ms)
    return ServerError(request_id, http_status_code(status), f"the server answered HTTP {status}")
