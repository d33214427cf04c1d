"""The wire protocol between the Kokoro model server and its clients (architecture §3), in both directions.

One module, imported by both ends (``tts_container`` and ``strands_kokoro.sessions``): every message is
a typed dataclass here, built with ``to_wire()`` (or ``to_dict()`` where it travels inside SSE or an
HTTP body) and read with one ``parse_*`` function per direction. No frame is built or parsed anywhere
else. It is pure data and validation: no sockets, no event loop, no numpy.

Why the classification rule matters: raw PCM can begin with byte ``0x7b`` (``{``), so a receiver may
only call a payload a control frame when the *whole* payload decodes as UTF-8 JSON to an object.

Why errors never echo what the client sent beyond a short prefix: an error frame is queued while the
client may not be reading; echoing a 60 KB ``request_id`` or the repr of a huge list would let one
client make the server hold megabytes per bad message. Client-chosen request ids are bounded too.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal, get_args

from strands_kokoro.errors import CodedError

WS_PATH = "/invocations-bidirectional-stream"
INVOCATIONS_PATH = "/invocations"
PING_PATH = "/ping"
VOICES_PATH = "/voices"  # the model server's voices: {default, voices: [{name, lang}]}

AUDIO_FORMAT = "pcm_s16le"
CHANNELS = 1
SAMPLE_WIDTH_BYTES = 2
DEFAULT_SAMPLE_RATE = 24_000
DEFAULT_VOICE = "af_heart"
# A request without ``lang`` is read in its voice's language (the name's first letter: ``ff_siwis`` is
# French), and in this one where the server has no G2P for that language.
DEFAULT_LANG = "en-us"
# Rates the server resamples to (soxr); 24 kHz is Kokoro's native rate.
SUPPORTED_SAMPLE_RATES: tuple[int, ...] = (8_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000)
MIN_SPEED = 0.5
MAX_SPEED = 2.0

# Limits. A message is one WebSocket frame or one POST body.
MAX_MESSAGE_BYTES = 64 * 1024
MAX_TEXT_CHARS = 5_000
MAX_CONTEXT_CHARS = 1_000  # previous_text / next_text: only their words next to the text are used
# previous_text / next_text: the words next to the text the server renders with (for the prosody at the
# edge: Ma et al. 2020, a lookahead of 1-2 words gets close to whole-sentence quality); a client sends
# no more ``next_text`` than it uses.
CONTEXT_WORDS_BEFORE = 6
CONTEXT_WORDS_AFTER = 4
MAX_QUEUED_REQUESTS = 32
# Voice mixes (Kokoro-FastAPI's syntax, ``af_bella(2)+af_sky(1)``): at most this many voices, each weight a
# positive number up to MAX_VOICE_WEIGHT (the weights are shares: only their ratios count).
MAX_VOICE_PARTS = 4
MAX_VOICE_WEIGHT = 100.0
# A request's ``lexicon``: words to the phonemes to say them with (misaki's / Kokoro's phoneme symbols).
MAX_LEXICON_ENTRIES = 100
MAX_LEXICON_WORD_CHARS = 64
MAX_LEXICON_PHONEMES_CHARS = 128
MAX_REQUEST_ID_CHARS = 128
_SHOWN_CHARS = 64  # at most this much of a client's value appears in an error message

# The audio a client asks for (``format`` of a turn, a ``synthesize`` or a POST; Strands' AudioFormat names):
# raw PCM, Ogg Opus or MP3 (:mod:`strands_kokoro.audio_encoding`). PCM is the default everywhere: a client
# that names no format gets the bytes every client before it got.
AudioFormatName = Literal["pcm", "opus", "mp3"]
AUDIO_FORMATS: tuple[AudioFormatName, ...] = get_args(AudioFormatName)
# What audio frames and events say the bytes are (``format`` of ``synthesis_start`` and ``audio_chunk``):
# PCM keeps the name it always had; "opus" is an Ogg Opus stream (RFC 7845), "mp3" MPEG audio frames.
WIRE_AUDIO_FORMATS: dict[AudioFormatName, str] = {"pcm": AUDIO_FORMAT, "opus": "opus", "mp3": "mp3"}

# POST /invocations bodies: raw PCM, streaming WAV, SSE (base64 PCM), or a raw Ogg Opus / MP3 stream.
InvocationFormat = Literal["pcm", "wav", "sse", "opus", "mp3"]
INVOCATION_FORMATS: tuple[InvocationFormat, ...] = get_args(InvocationFormat)


class ErrorCode(StrEnum):
    """Stable error codes; clients switch on these, never on message text."""

    BAD_JSON = "bad_json"
    BAD_UTF8 = "bad_utf8"
    BAD_MESSAGE = "bad_message"  # valid JSON, but not an object or a field has the wrong type
    BAD_HTTP = "bad_http"  # the request is not valid HTTP/1.1 (answered by the server's protocol layer)
    NOT_FOUND = "not_found"  # no such path (HTTP 404)
    METHOD_NOT_ALLOWED = "method_not_allowed"  # the path takes another method (HTTP 405)
    MESSAGE_TOO_LARGE = "message_too_large"
    MISSING_TEXT = "missing_text"
    TEXT_TOO_LONG = "text_too_long"
    UNKNOWN_VOICE = "unknown_voice"
    # A voice mix that is not one (``af_bella(2)+af_sky(1)``): bad syntax, a bad weight, too many parts.
    BAD_VOICE = "bad_voice"
    # A ``lexicon`` that is not an object of words to phonemes within the limits.
    BAD_LEXICON = "bad_lexicon"
    UNSUPPORTED_LANG = "unsupported_lang"
    BAD_SPEED = "bad_speed"
    BAD_SAMPLE_RATE = "bad_sample_rate"
    BAD_FORMAT = "bad_format"
    # A compressed format this server cannot encode (no PyAV installed): ask again for "pcm".
    FORMAT_UNAVAILABLE = "format_unavailable"
    UNKNOWN_TYPE = "unknown_type"
    ENGINE_FAILED = "engine_failed"
    # A fault of the server's own while reading a request (logged there, with its trace); on a session
    # the session goes on.
    INTERNAL_ERROR = "internal_error"
    OVERLOADED = "overloaded"
    NOT_READY = "not_ready"
    # The text has nothing a voice can say (only combining marks, zero-width or format characters,
    # punctuation, ...): refused before any work, or after the engine made no audio of it.
    NOTHING_TO_SAY = "nothing_to_say"
    # Most of the text's letters are in a script the request's language cannot read (Arabic, Hebrew, CJK
    # ... with an English voice): spoken, it would be minutes of letter names.
    UNSUPPORTED_SCRIPT = "unsupported_script"
    # The request's headers or body stopped arriving (HTTP 408); the connection is closed.
    REQUEST_TIMEOUT = "request_timeout"


# Refusals about a request's settings (voice, language, speed, rate, format), not its text: every request
# of a turn sent with the same settings gets the same answer, so a client stops after the first.
SETTING_REFUSALS: frozenset[ErrorCode] = frozenset(
    {
        ErrorCode.UNKNOWN_VOICE,
        ErrorCode.BAD_VOICE,
        ErrorCode.BAD_LEXICON,
        ErrorCode.UNSUPPORTED_LANG,
        ErrorCode.BAD_SPEED,
        ErrorCode.BAD_SAMPLE_RATE,
        ErrorCode.BAD_FORMAT,
        ErrorCode.FORMAT_UNAVAILABLE,
    }
)


class ProtocolError(CodedError):
    """A client message the server refuses: a stable code, a message written for humans, and the
    request it is about (if the message named one). Sending the same message again cannot help."""

    code: ErrorCode

    def __init__(self, code: ErrorCode, message: str, request_id: str | None = None) -> None:
        super().__init__(code, message)
        self.request_id = request_id

    def frame(self) -> ServerError:
        return ServerError(self.request_id, self.code, self.message)


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


class _JsonMessage:
    """A message that travels as one JSON object: ``to_wire()`` is its text frame."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_wire(self) -> str:
        return json_text(self.to_dict())


# ---------------------------------------------------------------------------------------------- client


@dataclass(frozen=True, slots=True)
class SynthesizeRequest(_JsonMessage):
    """One text to speak. ``request_id`` is chosen by the client so audio can be matched to it; the server
    assigns one when it is left out.

    ``previous_text`` / ``next_text``: words spoken just before / after ``text`` in the same sentence, by
    other requests (the names ElevenLabs uses for the same idea). They are not spoken by this request;
    the server renders ``text`` as part of that sentence, so a sentence cut into several requests sounds
    as if spoken whole: no pause, lengthened word or falling pitch at the cut. Fields added after the
    first release: older servers ignore them, older clients never send them.

    ``lang``: the G2P to read ``text`` with; ``None`` (not sent): the voice's language (see
    ``DEFAULT_LANG``). Older clients always sent one, ``en-us`` unless told otherwise.

    ``format``: the audio the request's binary frames carry (``pcm``, ``opus``: one Ogg Opus stream per
    request, ``mp3``). Sent only when not ``pcm``; an older server ignores it and sends PCM, which its
    ``synthesis_start`` says (``format: "pcm_s16le"``), so a client reads the format from there.

    ``voice`` may be a mix of voices (:func:`parse_voice`). ``lexicon``: words to say with the given
    phonemes (:func:`parse_lexicon`), as if each were written ``[word](/phonemes/)`` in ``text``. Sent only
    when not empty; an older server ignores it.
    """

    text: str
    request_id: str | None = None
    voice: str = DEFAULT_VOICE
    speed: float = 1.0
    sample_rate: int = DEFAULT_SAMPLE_RATE
    lang: str | None = None
    previous_text: str | None = None
    next_text: str | None = None
    format: AudioFormatName = "pcm"
    lexicon: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": "synthesize", "text": self.text}
        if self.request_id is not None:
            body["request_id"] = self.request_id
        body |= {
            "voice": self.voice,
            "speed": self.speed,
            "sample_rate": self.sample_rate,
        }
        if self.lang is not None:
            body["lang"] = self.lang
        if self.previous_text:
            body["previous_text"] = self.previous_text
        if self.next_text:
            body["next_text"] = self.next_text
        if self.format != "pcm":
            body["format"] = self.format
        if self.lexicon:
            body["lexicon"] = dict(self.lexicon)
        return body


@dataclass(frozen=True, slots=True)
class Cancel(_JsonMessage):
    """Barge-in: drop queued requests, stop the one in flight at its next segment; always answered with
    one :class:`Cancelled`."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": "cancel"}


@dataclass(frozen=True, slots=True)
class Close(_JsonMessage):
    """The only client message that ends a session: the requests already queued are spoken, then the
    server closes. After it the server acts on one message only, ``cancel`` (answered; the queue is then
    dropped and the session still ends), and a disconnect stops the queued work at once."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": "close"}


ClientMessage = SynthesizeRequest | Cancel | Close


@dataclass(frozen=True, slots=True)
class Invocation:
    """POST /invocations: one whole text, its audio streamed back in ``format``."""

    request: SynthesizeRequest
    format: InvocationFormat = "pcm"

    def to_body(self) -> bytes:
        body = self.request.to_dict()
        body.pop("format", None)  # the body's own format names the audio (a POST has one)
        return json_text(body | {"format": self.format}).encode("utf-8")


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


def _load_object(payload: bytes | str) -> dict[str, Any]:
    obj = _json(decode_text(payload))
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, f"message must be a JSON object, got {json_type(obj)}")
    return obj


def parse_json_object(payload: bytes | str) -> dict[str, Any]:
    """A client payload as one JSON object, read by the rules of every message here (size, UTF-8, JSON,
    an object), or :class:`ProtocolError`: for the server's other APIs' bodies."""
    return _load_object(payload)


def _optional_str(obj: dict[str, Any], key: str, request_id: str | None) -> str | None:
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


def _sample_rate(value: object, request_id: str | None) -> int:
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


def _request_id(obj: dict[str, Any]) -> str | None:
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


def _context(obj: dict[str, Any], key: str, request_id: str | None) -> str | None:
    """``previous_text`` / ``next_text``: optional, bounded like ``text`` (blank counts as absent)."""
    value = _optional_str(obj, key, request_id)
    if value is not None and len(value) > MAX_CONTEXT_CHARS:
        raise ProtocolError(
            ErrorCode.TEXT_TOO_LONG,
            f"'{key}' has {len(value)} characters; the limit is {MAX_CONTEXT_CHARS}",
            request_id,
        )
    return value if value and value.strip() else None


@dataclass(frozen=True, slots=True)
class VoiceMix:
    """A voice as a request names it: one voice, or several mixed, each with its share (summing to 1).

    Kokoro-FastAPI's syntax: ``af_bella+af_sky`` (equal shares), ``af_bella(2)+af_sky(1)`` (two thirds and
    one third). The mixed voice is the shares' weighted mean of the voices' style tables; its language
    is its first voice's.
    """

    parts: tuple[tuple[str, float], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.parts)

    @property
    def canonical(self) -> str:
        """One spelling per mix (``af_bella(0.6667)+af_sky(0.3333)``; a single voice is its name)."""
        if len(self.parts) == 1:
            return self.parts[0][0]
        return "+".join(f"{name}({round(share, 4):g})" for name, share in self.parts)


_VOICE_PART = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9_.-]{0,63})\s*(?:\(\s*([^()]*?)\s*\))?\s*")


def parse_voice(spec: str, request_id: str | None = None) -> VoiceMix:
    """A voice or a voice mix (see :class:`VoiceMix`), or ``bad_voice``: a part that is not a name with
    an optional ``(weight)``, a weight that is not a positive number up to ``MAX_VOICE_WEIGHT``, or more
    than ``MAX_VOICE_PARTS`` voices. Whether each voice exists is the server's to say (``unknown_voice``).
    A voice named twice gets its weights added."""
    pieces = spec.split("+")
    if len(pieces) > MAX_VOICE_PARTS:
        raise ProtocolError(
            ErrorCode.BAD_VOICE,
            f"a voice mix has at most {MAX_VOICE_PARTS} voices; got {len(pieces)} in {shown(spec)}",
            request_id,
        )
    weights: dict[str, float] = {}
    for piece in pieces:
        match = _VOICE_PART.fullmatch(piece)
        if match is None:
            raise ProtocolError(
                ErrorCode.BAD_VOICE,
                f"{shown(spec)} is not a voice or a mix such as af_bella(2)+af_sky(1)",
                request_id,
            )
        name, raw = match.group(1), match.group(2)
        weight = 1.0 if raw is None else _weight(raw)
        if weight is None:
            raise ProtocolError(
                ErrorCode.BAD_VOICE,
                f"the weight of {shown(name)} in a voice mix must be a number above 0 and up to "
                f"{MAX_VOICE_WEIGHT:g}, got {shown(raw)}",
                request_id,
            )
        weights[name] = weights.get(name, 0.0) + weight
    total = sum(weights.values())
    return VoiceMix(tuple((name, weight / total) for name, weight in weights.items()))


def _weight(raw: str) -> float | None:
    try:
        weight = float(raw)
    except ValueError:
        return None
    return weight if math.isfinite(weight) and 0 < weight <= MAX_VOICE_WEIGHT else None


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


def _voice(obj: dict[str, Any], request_id: str | None) -> str:
    """The request's voice (a name or a mix, see :func:`parse_voice`), its mix in canonical spelling."""
    raw = _optional_str(obj, "voice", request_id)
    if not raw:
        return DEFAULT_VOICE
    if not is_voice_mix(raw):
        return raw  # a name: whether the server has it is its to say (``unknown_voice``)
    return parse_voice(raw, request_id).canonical


def is_voice_mix(voice: str) -> bool:
    """Whether ``voice`` is written as a mix (or a weighted voice): it holds ``+`` or parentheses."""
    return any(mark in voice for mark in "+()")


def voice_names(voice: str) -> tuple[str, ...]:
    """The voices ``voice`` names: itself, or each voice of a mix (none for a mix that is not one)."""
    if not is_voice_mix(voice):
        return (voice,)
    try:
        return parse_voice(voice).names
    except ProtocolError:
        return ()


def parse_synthesize_fields(obj: dict[str, Any]) -> SynthesizeRequest:
    """A ``synthesize`` request from its fields (the WebSocket message's, POST's, and those another API's
    request maps onto them), or :class:`ProtocolError`."""
    return _synthesize(obj)


def _synthesize(obj: dict[str, Any]) -> SynthesizeRequest:
    request_id = _request_id(obj)
    return SynthesizeRequest(
        text=_text(obj, request_id),
        request_id=request_id,
        voice=_voice(obj, request_id),
        speed=parse_speed(obj.get("speed"), request_id),
        sample_rate=_sample_rate(obj.get("sample_rate"), request_id),
        lang=_optional_str(obj, "lang", request_id) or None,
        previous_text=_context(obj, "previous_text", request_id),
        next_text=_context(obj, "next_text", request_id),
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


# ---------------------------------------------------------------------------------------------- server


@dataclass(frozen=True, slots=True)
class SessionStarted(_JsonMessage):
    """The server's first frame on a session: which engine speaks, how soon a sentence's first audio
    comes whatever its length (``first_audio_ms``; None when it grows with the length), and how fast it
    synthesizes (``rtf``: seconds of work per second of audio), both measured by the server at warm-up.
    A client that knows a whole sentence starts about as fast as a phrase does not cut sentences for
    latency. A frame added after the first release: older clients ignore it (unknown types are skipped)."""

    engine: str
    first_audio_ms: float | None = None
    rtf: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "session_start",
            "engine": self.engine,
            "first_audio_ms": None if self.first_audio_ms is None else round(self.first_audio_ms, 1),
            "rtf": None if self.rtf is None else round(self.rtf, 4),
        }


@dataclass(frozen=True, slots=True)
class SynthesisStarted(_JsonMessage):
    """The audio frames that follow belong to ``request_id`` (until its ``synthesis_complete``).

    ``format``: what those frames are (``pcm_s16le``, ``opus``, ``mp3``: :data:`WIRE_AUDIO_FORMATS`);
    ``sample_rate`` is the PCM's rate, encoded or not.
    """

    request_id: str
    sample_rate: int = DEFAULT_SAMPLE_RATE
    channels: int = CHANNELS
    format: str = AUDIO_FORMAT

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "synthesis_start",
            "request_id": self.request_id,
            "format": self.format,
            "sample_rate": self.sample_rate,
            "channels": self.channels,
        }


@dataclass(frozen=True, slots=True)
class Word:
    """When a word is heard: milliseconds from the start of its request's audio (as the client gets it)."""

    text: str
    start_ms: float
    end_ms: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "start_ms": round(self.start_ms, 1), "end_ms": round(self.end_ms, 1)}


@dataclass(frozen=True, slots=True)
class SynthesisCompleted(_JsonMessage):
    """All of a request's audio was sent; ``first_audio_ms`` and ``elapsed_ms`` count from its arrival.

    ``words``: when each word is heard in the request's audio (after the server's trimming and
    resampling), from the model's own durations; empty when the engine cannot tell. A field added
    after the first release: older clients ignore it.
    """

    request_id: str
    audio_ms: float
    chunks: int
    first_audio_ms: float | None
    elapsed_ms: float
    words: tuple[Word, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "synthesis_complete",
            "request_id": self.request_id,
            "audio_ms": round(self.audio_ms, 3),
            "chunks": self.chunks,
            "first_audio_ms": None if self.first_audio_ms is None else round(self.first_audio_ms, 3),
            "elapsed_ms": round(self.elapsed_ms, 3),
            "words": [word.to_dict() for word in self.words],
        }


@dataclass(frozen=True, slots=True)
class WordTimings(_JsonMessage):
    """More of a request's words, timed as soon as the engine has rendered them (ms from the start of
    the request's audio, as in ``synthesis_complete``), sent before the audio that holds them.

    Why: a request is spoken while it is still being synthesized, so captions that waited for
    ``synthesis_complete`` would miss the first words of every long request. Each frame carries only
    words not sent before; ``synthesis_complete`` still carries them all. A frame added after the first
    release: older clients ignore it (unknown types are skipped).
    """

    request_id: str
    words: tuple[Word, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "word_timings",
            "request_id": self.request_id,
            "words": [word.to_dict() for word in self.words],
        }


@dataclass(frozen=True, slots=True)
class ServerError(_JsonMessage):
    """An ``error`` frame: the server refused or failed one request (or message); the session goes on."""

    request_id: str | None
    code: str
    message: str
    # Set only on a refusal that asking again later can cure (``overloaded``): how long to wait first.
    retry_after_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        frame: dict[str, Any] = {
            "type": "error",
            "request_id": self.request_id,
            "code": self.code,
            "message": self.message,
        }
        if self.retry_after_ms is not None:
            frame["retry_after_ms"] = self.retry_after_ms
        return frame


@dataclass(frozen=True, slots=True)
class Cancelled(_JsonMessage):
    """The answer to ``cancel``: how many accepted requests it dropped.

    Every ``cancel`` the server reads gets exactly one ``cancelled``, in the order the cancels were sent
    (also one that drops nothing, and one sent after ``close``); a burst of cancels is never answered
    once for all. A cancel goes unanswered only when the session ends first: the client disconnected, or
    the server closed it for not reading (``error_flood``).
    """

    dropped: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": "cancelled", "dropped": self.dropped}


@dataclass(frozen=True, slots=True)
class AudioData:
    """PCM s16le mono of ``request_id``: a binary frame on the WebSocket, an ``audio`` event in SSE."""

    request_id: str
    pcm: bytes

    def to_dict(self, *, seq: int, sample_rate: int) -> dict[str, Any]:
        """The SSE form: base64 inside JSON (+33% payload, the price of a browser-readable stream)."""
        return {
            "type": "audio",
            "request_id": self.request_id,
            "seq": seq,
            "audio": base64.b64encode(self.pcm).decode("ascii"),
            "format": AUDIO_FORMAT,
            "sample_rate": sample_rate,
            "channels": CHANNELS,
        }


ControlFrame = SessionStarted | SynthesisStarted | WordTimings | SynthesisCompleted | ServerError | Cancelled
ServerMessage = ControlFrame | AudioData


def audio_ms(n_bytes: int, sample_rate: int) -> float:
    """Duration of ``n_bytes`` of mono s16le PCM, in milliseconds."""
    return n_bytes / (SAMPLE_WIDTH_BYTES * CHANNELS) / sample_rate * 1000.0


def sse_event(obj: Mapping[str, Any]) -> bytes:
    """One server-sent event carrying a JSON object (``data: {json}\\n\\n``)."""
    return b"data: " + json_text(obj).encode("utf-8") + b"\n\n"


# ---------------------------------------------------------------------------------------------- receiving


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
    return ServerError(request_id, f"http_{status}", f"the server answered HTTP {status}")
