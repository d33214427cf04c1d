"""One validator per field of a ``synthesize`` request, each refusing a bad value with its own code.

Why shared: the WebSocket message, the POST body and the other APIs a server maps onto them take the
same fields, and a field must be refused alike (code and message) whichever way it came.
"""

from __future__ import annotations

from typing import Any

from strands_kokoro.protocol.audio_formats import (
    AUDIO_FORMATS,
    DEFAULT_SAMPLE_RATE,
    SUPPORTED_SAMPLE_RATES,
    AudioFormatName,
)
from strands_kokoro.protocol.errors import ErrorCode, ProtocolError
from strands_kokoro.protocol.json_wire import finite_number, json_type, shown
from strands_kokoro.protocol.limits import (
    DEFAULT_VOICE,
    MAX_CONTEXT_CHARS,
    MAX_LEXICON_ENTRIES,
    MAX_LEXICON_PHONEMES_CHARS,
    MAX_LEXICON_WORD_CHARS,
    MAX_REQUEST_ID_CHARS,
    MAX_SPEED,
    MAX_TEXT_CHARS,
    MIN_SPEED,
)
from strands_kokoro.protocol.voices import is_voice_mix, parse_voice


def optional_str(obj: dict[str, Any], key: str, request_id: str | None) -> str | None:
    """Field ``key`` as a string, None when absent or null, or ``bad_message``."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, f"'{key}' must be a string", request_id)
    return value


def parse_speed(value: object, request_id: str | None = None) -> float:
    """A speaking speed (None: 1.0), or ``bad_speed``. Shared by every place that takes one."""
    if value is None:
        return 1.0
    speed = finite_number(value)
    if speed is None:
        raise ProtocolError(ErrorCode.BAD_SPEED, "'speed' must be a number", request_id)
    if not MIN_SPEED <= speed <= MAX_SPEED:
        raise ProtocolError(
            ErrorCode.BAD_SPEED,
            f"'speed' must be between {MIN_SPEED} and {MAX_SPEED}, got {shown(value)}",
            request_id,
        )
    return speed


def parse_sample_rate(value: object, request_id: str | None) -> int:
    """An output sample rate (None: the default), one the server resamples to, or ``bad_sample_rate``."""
    if value is None:
        return DEFAULT_SAMPLE_RATE
    if isinstance(value, bool) or not isinstance(value, int) or value not in SUPPORTED_SAMPLE_RATES:
        rates = ", ".join(str(r) for r in SUPPORTED_SAMPLE_RATES)
        raise ProtocolError(
            ErrorCode.BAD_SAMPLE_RATE, f"'sample_rate' must be one of {rates}, got {shown(value)}", request_id
        )
    return value


def parse_audio_format(value: object, request_id: str | None = None) -> AudioFormatName:
    """A requested audio format (None: ``pcm``), or ``bad_format``. Shared by every place that takes one."""
    if value is None:
        return "pcm"
    if not isinstance(value, str) or value not in AUDIO_FORMATS:
        names = ", ".join(AUDIO_FORMATS)
        raise ProtocolError(
            ErrorCode.BAD_FORMAT, f"'format' must be one of {names}, got {shown(value)}", request_id
        )
    return value


def parse_text(obj: dict[str, Any], request_id: str | None) -> str:
    """The text to speak: present (else ``missing_text``), a string, not blank, within the limit."""
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


def parse_request_id(obj: dict[str, Any]) -> str | None:
    """The client's request id (None: the server assigns one): a bounded string, or ``bad_message``."""
    raw = obj.get("request_id")
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, "'request_id' must be a string")
    if not raw:  # it names the request's frames: an empty name would be replaced, or match nothing
        raise ProtocolError(
            ErrorCode.BAD_MESSAGE, f"'request_id' must be 1-{MAX_REQUEST_ID_CHARS} characters"
        )
    if len(raw) > MAX_REQUEST_ID_CHARS:
        raise ProtocolError(
            ErrorCode.BAD_MESSAGE,
            f"'request_id' has {len(raw)} characters; the limit is {MAX_REQUEST_ID_CHARS}",
        )
    return raw


def parse_context(obj: dict[str, Any], key: str, request_id: str | None) -> str | None:
    """``previous_text`` / ``next_text``: optional, bounded like ``text`` (blank counts as absent)."""
    value = optional_str(obj, key, request_id)
    if value is not None and len(value) > MAX_CONTEXT_CHARS:
        raise ProtocolError(
            ErrorCode.TEXT_TOO_LONG,
            f"'{key}' has {len(value)} characters; the limit is {MAX_CONTEXT_CHARS}",
            request_id,
        )
    return value if value and value.strip() else None


_LEXICON_FORBIDDEN = frozenset("[]()/\n\r")


def parse_lexicon(value: object, request_id: str | None = None) -> tuple[tuple[str, str], ...]:
    """A ``lexicon`` (None: empty): a JSON object of words to phonemes, or ``bad_lexicon``.

    A word is 1-``MAX_LEXICON_WORD_CHARS`` characters without whitespace, its phonemes
    1-``MAX_LEXICON_PHONEMES_CHARS``; neither may hold ``[ ] ( ) /`` (the inline form's own marks).
    """
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ProtocolError(
            ErrorCode.BAD_LEXICON,
            f"'lexicon' must be an object of words to phonemes, got {json_type(value)}",
            request_id,
        )
    if len(value) > MAX_LEXICON_ENTRIES:
        raise ProtocolError(
            ErrorCode.BAD_LEXICON,
            f"'lexicon' has {len(value)} words; the limit is {MAX_LEXICON_ENTRIES}",
            request_id,
        )
    entries = []
    for word, phonemes in value.items():
        if (
            not isinstance(phonemes, str)
            or not 0 < len(word) <= MAX_LEXICON_WORD_CHARS
            or not 0 < len(phonemes.strip()) <= MAX_LEXICON_PHONEMES_CHARS
            or any(char.isspace() for char in word)
            or _LEXICON_FORBIDDEN.intersection(word + phonemes)
        ):
            raise ProtocolError(
                ErrorCode.BAD_LEXICON,
                f"'lexicon' entry {shown(word)}: a word (1-{MAX_LEXICON_WORD_CHARS} characters, no space) "
                f"to phonemes (1-{MAX_LEXICON_PHONEMES_CHARS} characters as a string), neither holding "
                "[ ] ( ) /",
                request_id,
            )
        entries.append((word, phonemes.strip()))
    return tuple(entries)


def parse_request_voice(obj: dict[str, Any], request_id: str | None) -> str:
    """The request's voice (a name or a mix, see :func:`parse_voice`), its mix in canonical spelling."""
    raw = optional_str(obj, "voice", request_id)
    if not raw:
        return DEFAULT_VOICE
    if not is_voice_mix(raw):
        return raw  # a name: whether the server has it is its to say (``unknown_voice``)
    return parse_voice(raw, request_id).canonical
