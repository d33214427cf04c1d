"""The wire protocol between the Kokoro model server and its clients (DESIGN §3).

One module, imported by both ends (``tts_container`` and ``strands_kokoro.sessions``), so no frame is
parsed or built twice. It is pure data and validation: no sockets, no event loop, no numpy.

Why the classification rule matters: raw PCM can begin with byte ``0x7b`` (``{``), so a receiver may
only call a payload a control frame when the *whole* payload decodes as UTF-8 JSON to an object.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

WS_PATH = "/invocations-bidirectional-stream"
INVOCATIONS_PATH = "/invocations"
PING_PATH = "/ping"

AUDIO_FORMAT = "pcm_s16le"
CHANNELS = 1
SAMPLE_WIDTH_BYTES = 2
DEFAULT_SAMPLE_RATE = 24_000
DEFAULT_VOICE = "af_heart"
DEFAULT_LANG = "en-us"
# Rates the server resamples to (soxr); 24 kHz is Kokoro's native rate.
SUPPORTED_SAMPLE_RATES: tuple[int, ...] = (8_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000)
MIN_SPEED = 0.5
MAX_SPEED = 2.0

# Limits. A message is one WebSocket frame or one POST body.
MAX_MESSAGE_BYTES = 64 * 1024
MAX_TEXT_CHARS = 5_000
MAX_QUEUED_REQUESTS = 32

InvocationFormat = Literal["pcm", "wav", "sse"]
INVOCATION_FORMATS: tuple[str, ...] = ("pcm", "wav", "sse")


class ErrorCode(StrEnum):
    """Stable error codes; clients switch on these, never on message text."""

    BAD_JSON = "bad_json"
    BAD_UTF8 = "bad_utf8"
    BAD_MESSAGE = "bad_message"  # valid JSON, but not an object or a field has the wrong type
    MESSAGE_TOO_LARGE = "message_too_large"
    MISSING_TEXT = "missing_text"
    TEXT_TOO_LONG = "text_too_long"
    UNKNOWN_VOICE = "unknown_voice"
    BAD_SPEED = "bad_speed"
    BAD_SAMPLE_RATE = "bad_sample_rate"
    BAD_FORMAT = "bad_format"
    UNKNOWN_TYPE = "unknown_type"
    ENGINE_FAILED = "engine_failed"
    OVERLOADED = "overloaded"
    NOT_READY = "not_ready"


class ProtocolError(Exception):
    """A client message the server refuses; carries a stable code and a message written for humans."""

    def __init__(self, code: ErrorCode, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


# ---------------------------------------------------------------------------------------------- client


@dataclass(frozen=True, slots=True)
class SynthesizeRequest:
    """One text to speak. ``request_id`` is assigned by the server when the client leaves it out."""

    text: str
    request_id: str | None = None
    voice: str = DEFAULT_VOICE
    speed: float = 1.0
    sample_rate: int = DEFAULT_SAMPLE_RATE
    lang: str = DEFAULT_LANG


@dataclass(frozen=True, slots=True)
class Cancel:
    """Barge-in: drop queued requests, stop the one in flight at its next segment."""


@dataclass(frozen=True, slots=True)
class Close:
    """The only client message that ends a session."""


ClientMessage = SynthesizeRequest | Cancel | Close


def decode_text(payload: bytes | str) -> str:
    """Decode a client payload: SageMaker delivers every client message as a binary frame."""
    if isinstance(payload, str):
        text = payload
    else:
        if len(payload) > MAX_MESSAGE_BYTES:
            raise ProtocolError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"message is {len(payload)} bytes; the limit is {MAX_MESSAGE_BYTES}",
            )
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(ErrorCode.BAD_UTF8, "message is not valid UTF-8") from None
    if len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
        raise ProtocolError(ErrorCode.MESSAGE_TOO_LARGE, f"message is over {MAX_MESSAGE_BYTES} bytes")
    return text


def _load_object(payload: bytes | str) -> dict[str, Any]:
    text = decode_text(payload)
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise ProtocolError(ErrorCode.BAD_JSON, "message is not valid JSON") from None
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, f"message must be a JSON object, got {type(obj).__name__}")
    return obj


def _optional_str(obj: dict[str, Any], key: str, request_id: str | None) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, f"'{key}' must be a string", request_id)
    return value


def _speed(obj: dict[str, Any], request_id: str | None) -> float:
    value = obj.get("speed", 1.0)
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ProtocolError(ErrorCode.BAD_SPEED, "'speed' must be a number", request_id)
    if not MIN_SPEED <= value <= MAX_SPEED:
        raise ProtocolError(
            ErrorCode.BAD_SPEED,
            f"'speed' must be between {MIN_SPEED} and {MAX_SPEED}, got {value}",
            request_id,
        )
    return float(value)


def _sample_rate(obj: dict[str, Any], request_id: str | None) -> int:
    value = obj.get("sample_rate", DEFAULT_SAMPLE_RATE)
    if value is None:
        return DEFAULT_SAMPLE_RATE
    if isinstance(value, bool) or not isinstance(value, int) or value not in SUPPORTED_SAMPLE_RATES:
        rates = ", ".join(str(r) for r in SUPPORTED_SAMPLE_RATES)
        raise ProtocolError(
            ErrorCode.BAD_SAMPLE_RATE, f"'sample_rate' must be one of {rates}, got {value!r}", request_id
        )
    return value


def _text(obj: dict[str, Any], request_id: str | None) -> str:
    if "text" not in obj or obj["text"] is None:
        raise ProtocolError(ErrorCode.MISSING_TEXT, "'text' is required", request_id)
    text = obj["text"]
    if not isinstance(text, str):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, "'text' must be a string", request_id)
    if not text.strip():
        raise ProtocolError(ErrorCode.MISSING_TEXT, "'text' is empty", request_id)
    if len(text) > MAX_TEXT_CHARS:
        raise ProtocolError(
            ErrorCode.TEXT_TOO_LONG,
            f"'text' has {len(text)} characters; the limit is {MAX_TEXT_CHARS}",
            request_id,
        )
    return text


def _synthesize_fields(obj: dict[str, Any]) -> SynthesizeRequest:
    raw_id = obj.get("request_id")
    request_id = raw_id if isinstance(raw_id, str) else None
    if raw_id is not None and request_id is None:
        raise ProtocolError(ErrorCode.BAD_MESSAGE, "'request_id' must be a string")
    text = _text(obj, request_id)
    voice = _optional_str(obj, "voice", request_id) or DEFAULT_VOICE
    lang = _optional_str(obj, "lang", request_id) or DEFAULT_LANG
    return SynthesizeRequest(
        text=text,
        request_id=request_id,
        voice=voice,
        speed=_speed(obj, request_id),
        sample_rate=_sample_rate(obj, request_id),
        lang=lang,
    )


def parse_client_message(payload: bytes | str) -> ClientMessage:
    """Parse one client frame (text or binary) into a message, or raise :class:`ProtocolError`.

    A message with ``text`` and no ``type`` is a ``synthesize`` (the AWS sample's clients send that).
    Voice names are checked by the server, which knows the engine's voices.
    """
    obj = _load_object(payload)
    kind = obj.get("type")
    if kind is None and "text" in obj:
        kind = "synthesize"
    if kind == "synthesize":
        return _synthesize_fields(obj)
    if kind == "cancel":
        return Cancel()
    if kind == "close":
        return Close()
    if kind is None:
        raise ProtocolError(ErrorCode.MISSING_TEXT, "message has neither 'type' nor 'text'")
    shown = kind if isinstance(kind, str) else json.dumps(kind)
    raise ProtocolError(
        ErrorCode.UNKNOWN_TYPE, f"unknown message type {shown[:64]!r}; expected synthesize, cancel or close"
    )


def synthesize_message(
    text: str,
    *,
    request_id: str | None = None,
    voice: str | None = None,
    speed: float | None = None,
    sample_rate: int | None = None,
    lang: str | None = None,
) -> str:
    """Build a client ``synthesize`` frame (fields left as None are left out)."""
    msg: dict[str, Any] = {"type": "synthesize", "text": text}
    for key, value in (
        ("request_id", request_id),
        ("voice", voice),
        ("speed", speed),
        ("sample_rate", sample_rate),
        ("lang", lang),
    ):
        if value is not None:
            msg[key] = value
    return json.dumps(msg, ensure_ascii=False)


CANCEL_MESSAGE = json.dumps({"type": "cancel"})
CLOSE_MESSAGE = json.dumps({"type": "close"})


# ---------------------------------------------------------------------------------------------- server


def synthesis_start(request_id: str, sample_rate: int) -> str:
    return json.dumps(
        {
            "type": "synthesis_start",
            "request_id": request_id,
            "format": AUDIO_FORMAT,
            "sample_rate": sample_rate,
            "channels": CHANNELS,
        }
    )


def synthesis_complete(
    request_id: str, *, audio_ms: float, chunks: int, first_audio_ms: float | None, elapsed_ms: float
) -> str:
    return json.dumps(
        {
            "type": "synthesis_complete",
            "request_id": request_id,
            "audio_ms": round(audio_ms, 3),
            "chunks": chunks,
            "first_audio_ms": None if first_audio_ms is None else round(first_audio_ms, 3),
            "elapsed_ms": round(elapsed_ms, 3),
        }
    )


def error_frame(code: ErrorCode | str, message: str, request_id: str | None = None) -> str:
    return json.dumps({"type": "error", "request_id": request_id, "code": str(code), "message": message})


def cancelled_frame(dropped: int) -> str:
    return json.dumps({"type": "cancelled", "dropped": dropped})


def audio_ms(n_bytes: int, sample_rate: int) -> float:
    """Duration of ``n_bytes`` of mono s16le PCM, in milliseconds."""
    return n_bytes / (SAMPLE_WIDTH_BYTES * CHANNELS) / sample_rate * 1000.0


# ---------------------------------------------------------------------------------------------- receiving


def control_frame(payload: bytes | str) -> dict[str, Any] | None:
    """Return the control frame if the WHOLE payload is a UTF-8 JSON object, else None (it is audio).

    A text (str) frame is always control; a binary frame is control only if it passes the whole-object
    rule, because SageMaker's router re-wraps every server frame as bytes.
    """
    if isinstance(payload, str):
        try:
            obj = json.loads(payload)
        except json.JSONDecodeError:
            return None
        return obj if isinstance(obj, dict) else None
    if not payload or payload[:1] != b"{" or payload[-1:] != b"}":
        return None
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


# ---------------------------------------------------------------------------------------------- POST


@dataclass(frozen=True, slots=True)
class InvocationRequest:
    """POST /invocations body: one whole text, audio streamed back in ``format``."""

    synthesize: SynthesizeRequest
    format: str = "pcm"
    extra: dict[str, Any] = field(default_factory=dict)


def parse_invocation_request(body: bytes) -> InvocationRequest:
    """Parse and validate a POST /invocations body (same fields and codes as ``synthesize``)."""
    obj = _load_object(body)
    fmt = obj.get("format", "pcm")
    if fmt is None:
        fmt = "pcm"
    if not isinstance(fmt, str) or fmt not in INVOCATION_FORMATS:
        raise ProtocolError(ErrorCode.BAD_FORMAT, f"'format' must be one of pcm, wav, sse, got {fmt!r}")
    return InvocationRequest(synthesize=_synthesize_fields(obj), format=fmt)


def sse_event(obj: dict[str, Any]) -> bytes:
    """One server-sent event carrying a JSON object (``data: {json}\\n\\n``)."""
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n\n"


def sse_audio_event(request_id: str, seq: int, pcm: bytes, sample_rate: int) -> bytes:
    """An SSE event carrying base64 PCM, for browser pipelines (costs +33% payload)."""
    return sse_event(
        {
            "type": "audio",
            "request_id": request_id,
            "seq": seq,
            "audio": base64.b64encode(pcm).decode("ascii"),
            "format": AUDIO_FORMAT,
            "sample_rate": sample_rate,
            "channels": CHANNELS,
        }
    )
