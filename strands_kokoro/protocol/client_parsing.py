"""Reading a client's message on the server: bytes or text to one typed message, or a coded refusal.

Why one path: SageMaker delivers every client message as a binary frame, a local client may send text,
and a POST body is read by the same rules (size, UTF-8, JSON, an object), so every way in refuses the
same bad message with the same code. Client-chosen request ids are bounded, and a refusal names the
request only when its id is one an error frame can carry.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from strands_kokoro.protocol.audio_formats import INVOCATION_FORMATS, AudioFormatName
from strands_kokoro.protocol.client_messages import (
    Cancel,
    ClientMessage,
    Close,
    Invocation,
    SynthesizeRequest,
)
from strands_kokoro.protocol.errors import ErrorCode, ProtocolError
from strands_kokoro.protocol.json_wire import json_type, shown, utf8_encodable
from strands_kokoro.protocol.limits import MAX_MESSAGE_BYTES, MAX_REQUEST_ID_CHARS
from strands_kokoro.protocol.request_fields import (
    optional_str,
    parse_audio_format,
    parse_context,
    parse_lexicon,
    parse_request_id,
    parse_request_voice,
    parse_sample_rate,
    parse_speed,
    parse_text,
)


def decode_text(payload: bytes | str) -> str:
    """Decode a client payload: SageMaker delivers every client message as a binary frame.

    A leading byte order mark is ignored (RFC 8259 §8.1 allows it), as Python's ``json.loads`` of bytes
    does for the agent app's POST body, so every path of both servers reads the same message alike.
    """
    if isinstance(payload, str):
        text = payload.removeprefix("\ufeff")
    else:
        if len(payload) > MAX_MESSAGE_BYTES:
            raise ProtocolError(ErrorCode.MESSAGE_TOO_LARGE, f"message is over {MAX_MESSAGE_BYTES} bytes")
        try:
            text = payload.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ProtocolError(ErrorCode.BAD_UTF8, "message is not valid UTF-8") from None
    if len(text) > MAX_MESSAGE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_MESSAGE_BYTES:
        raise ProtocolError(ErrorCode.MESSAGE_TOO_LARGE, f"message is over {MAX_MESSAGE_BYTES} bytes")
    return text


def _json(text: str) -> Any:
    """``json.loads`` that never lets a client crash its caller: deep nesting, 4,300-digit integers,
    and ``"\\ud800"`` (valid JSON for a string no UTF-8 can carry, so no frame could echo it back)."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError, as is the int-digits limit
        raise ProtocolError(
            ErrorCode.BAD_JSON, "message is not valid JSON (or a number is too long)"
        ) from None
    if "\\u" in text and not utf8_encodable(obj):
        raise ProtocolError(
            ErrorCode.BAD_UTF8,
            "message has a lone surrogate (\\ud800-\\udfff) in a string",
            _echoable_id(obj),
        )
    return obj


def _echoable_id(obj: Any) -> str | None:
    """The message's ``request_id`` where an error may name it (a short string UTF-8 can carry)."""
    raw = obj.get("request_id") if isinstance(obj, dict) else None
    if isinstance(raw, str) and 0 < len(raw) <= MAX_REQUEST_ID_CHARS and utf8_encodable(raw):
        return raw
    return None


def _load_object(payload: bytes | str) -> dict[str, Any]:
    obj = _json(decode_text(payload))
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, f"message must be a JSON object, got {json_type(obj)}")
    return obj


def parse_json_object(payload: bytes | str) -> dict[str, Any]:
    """A client payload as one JSON object, read by the rules of every message here (size, UTF-8, JSON,
    an object), or :class:`ProtocolError`: for the server's other APIs' bodies."""
    return _load_object(payload)


def parse_synthesize_fields(obj: dict[str, Any]) -> SynthesizeRequest:
    """A ``synthesize`` request from its fields (the WebSocket message's, POST's, and those another API's
    request maps onto them), or :class:`ProtocolError`."""
    return _synthesize(obj)


def _synthesize(obj: dict[str, Any]) -> SynthesizeRequest:
    request_id = parse_request_id(obj)
    return SynthesizeRequest(
        text=parse_text(obj, request_id),
        request_id=request_id,
        voice=parse_request_voice(obj, request_id),
        speed=parse_speed(obj.get("speed"), request_id),
        sample_rate=parse_sample_rate(obj.get("sample_rate"), request_id),
        lang=optional_str(obj, "lang", request_id) or None,
        previous_text=parse_context(obj, "previous_text", request_id),
        next_text=parse_context(obj, "next_text", request_id),
        format=parse_audio_format(obj.get("format"), request_id),
        lexicon=parse_lexicon(obj.get("lexicon"), request_id),
    )


def parse_client_message(payload: bytes | str) -> ClientMessage:
    """Parse one client frame (text or binary) into a message, or raise :class:`ProtocolError`.

    A message with ``text`` and no ``type`` is a ``synthesize`` (the AWS sample's clients send that).
    Voices and languages are checked by the server, which knows what its engine speaks.
    """
    obj = _load_object(payload)
    kind = obj.get("type")
    if kind is None and "text" in obj:
        kind = "synthesize"
    if kind == "synthesize":
        return _synthesize(obj)
    if kind == "cancel":
        return Cancel()
    if kind == "close":
        return Close()
    request_id = _echoable_id(obj)
    if kind is None:
        raise ProtocolError(ErrorCode.MISSING_TEXT, "message has neither 'type' nor 'text'", request_id)
    raise ProtocolError(
        ErrorCode.UNKNOWN_TYPE,
        f"unknown message type {shown(kind)}; expected synthesize, cancel or close",
        request_id,
    )


def parse_invocation(body: bytes) -> Invocation:
    """Parse and validate a POST /invocations body (same fields and codes as ``synthesize``).

    ``format`` names the body: ``opus`` and ``mp3`` are the compressed stream itself, the others PCM.
    """
    obj = _load_object(body)
    fmt = obj.get("format")
    if fmt is None:
        fmt = "pcm"
    if not isinstance(fmt, str) or fmt not in INVOCATION_FORMATS:
        names = ", ".join(INVOCATION_FORMATS)
        raise ProtocolError(ErrorCode.BAD_FORMAT, f"'format' must be one of {names}, got {shown(fmt)}")
    audio: AudioFormatName = fmt if fmt in ("opus", "mp3") else "pcm"
    return Invocation(replace(_synthesize(obj | {"format": None}), format=audio), fmt)
