"""JSON as the wire writes and reads it: compact text, SSE events, and values shown back in errors.

Why one module: every frame, request and event of both servers is one JSON object, and the rules of
writing it (compact, non-ASCII kept) and of reading one a peer sent (a whole-payload object or audio;
numbers that are finite; strings UTF-8 can carry) must be the same everywhere.

Why errors never echo what the client sent beyond a short prefix: an error frame is queued while the
client may not be reading; echoing a 60 KB ``request_id`` or the repr of a huge list would let one
client make the server hold megabytes per bad message.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

_SHOWN_CHARS = 64  # at most this much of a client's value appears in an error message


def json_type(value: object) -> str:
    """What a client sent, in JSON's words ("null", "an array"), never Python's ("NoneType", "list")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list | tuple) else "an object"


def shown(value: object) -> str:
    """A client's value as it may appear in an error message: its type and a short prefix."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)[: _SHOWN_CHARS + 1]
    return repr(text[:_SHOWN_CHARS] + ("…" if len(text) > _SHOWN_CHARS else ""))


def json_text(obj: Mapping[str, Any]) -> str:
    """One JSON object as the wire writes it: compact, non-ASCII kept (the agent app's frames too)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class JsonMessage:
    """A message that travels as one JSON object: ``to_wire()`` is its text frame."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_wire(self) -> str:
        return json_text(self.to_dict())


def utf8_encodable(obj: Any) -> bool:
    """Does every string in ``obj`` (keys too) encode as UTF-8? Iterative: the nesting is the client's."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def finite_number(value: object) -> float | None:
    """A JSON number as a finite float; None for a bool, a non-number, NaN or infinity, and an integer
    too large for a float (JSON allows 400 digits, which ``float()`` and ``math.isfinite`` raise on)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def sse_event(obj: Mapping[str, Any]) -> bytes:
    """One server-sent event carrying a JSON object (``data: {json}\\n\\n``)."""
    return b"data: " + json_text(obj).encode("utf-8") + b"\n\n"


def control_object(payload: bytes | str) -> dict[str, Any] | None:
    """The JSON object if the WHOLE payload is one (architecture §3), else None: the payload is audio.

    A text (str) frame is JSON or nothing; a binary frame is control only if it passes the whole-object
    rule, because SageMaker's router re-wraps every server frame as bytes.
    """
    if isinstance(payload, bytes):
        if not payload or payload[:1] != b"{" or payload[-1:] != b"}":
            return None
        try:
            payload = payload.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        obj = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None
