"""The wire protocol between the Kokoro model server and its clients (architecture §3), in both directions.

One package, imported by both ends (``tts_container`` and ``strands_kokoro.sessions``): every message is
a typed dataclass here, built with ``to_wire()`` (or ``to_dict()`` where it travels inside SSE or an
HTTP body) and read with one ``parse_*`` function per direction. No frame is built or parsed anywhere
else. It is pure data and validation: no sockets, no event loop, no numpy.

Its modules, one concept each: :mod:`.limits` (routes, defaults, limits), :mod:`.audio_formats` (what the
audio is), :mod:`.json_wire` (JSON and SSE as the wire writes and reads them), :mod:`.errors` (the codes
and the refusal), :mod:`.client_messages` / :mod:`.client_parsing` (what a client sends, and reading it
with :mod:`.request_fields` and :mod:`.voices`), :mod:`.frames` / :mod:`.frame_parsing` (what a server
sends, and reading it). Import from the package: its names are the public ones.

Why the classification rule matters: raw PCM can begin with byte ``0x7b`` (``{``), so a receiver may
only call a payload a control frame when the *whole* payload decodes as UTF-8 JSON to an object.
"""

from __future__ import annotations

from strands_kokoro.protocol.audio_formats import (
    AUDIO_FORMAT,
    AUDIO_FORMATS,
    CHANNELS,
    DEFAULT_SAMPLE_RATE,
    INVOCATION_FORMATS,
    SAMPLE_WIDTH_BYTES,
    SUPPORTED_SAMPLE_RATES,
    WIRE_AUDIO_FORMATS,
    AudioFormatName,
    InvocationFormat,
    audio_ms,
)
from strands_kokoro.protocol.client_messages import (
    Cancel,
    ClientMessage,
    Close,
    Invocation,
    SynthesizeRequest,
)
from strands_kokoro.protocol.client_parsing import (
    decode_text,
    parse_client_message,
    parse_invocation,
    parse_json_object,
    parse_synthesize_fields,
)
from strands_kokoro.protocol.errors import (
    HTTP_STATUS_CODE_PREFIX,
    SETTING_REFUSALS,
    ErrorCode,
    ProtocolError,
    http_status_code,
)
from strands_kokoro.protocol.frame_parsing import (
    parse_control,
    parse_error_body,
    parse_sse_data,
)
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
from strands_kokoro.protocol.json_wire import (
    control_object,
    finite_number,
    json_text,
    json_type,
    shown,
    sse_event,
    utf8_encodable,
)
from strands_kokoro.protocol.limits import (
    CONTEXT_WORDS_AFTER,
    CONTEXT_WORDS_BEFORE,
    DEFAULT_LANG,
    DEFAULT_VOICE,
    INVOCATIONS_PATH,
    MAX_CONTEXT_CHARS,
    MAX_LEXICON_ENTRIES,
    MAX_LEXICON_PHONEMES_CHARS,
    MAX_LEXICON_WORD_CHARS,
    MAX_MESSAGE_BYTES,
    MAX_QUEUED_REQUESTS,
    MAX_REQUEST_ID_CHARS,
    MAX_SPEED,
    MAX_TEXT_CHARS,
    MAX_VOICE_PARTS,
    MAX_VOICE_WEIGHT,
    MIN_SPEED,
    PING_PATH,
    VOICES_PATH,
    WS_PATH,
)
from strands_kokoro.protocol.request_fields import (
    parse_audio_format,
    parse_lexicon,
    parse_speed,
)
from strands_kokoro.protocol.voices import (
    VoiceMix,
    is_voice_mix,
    parse_voice,
    voice_names,
)

__all__ = [
    "AUDIO_FORMAT",
    "AUDIO_FORMATS",
    "CHANNELS",
    "CONTEXT_WORDS_AFTER",
    "CONTEXT_WORDS_BEFORE",
    "DEFAULT_LANG",
    "DEFAULT_SAMPLE_RATE",
    "DEFAULT_VOICE",
    "HTTP_STATUS_CODE_PREFIX",
    "INVOCATIONS_PATH",
    "INVOCATION_FORMATS",
    "MAX_CONTEXT_CHARS",
    "MAX_LEXICON_ENTRIES",
    "MAX_LEXICON_PHONEMES_CHARS",
    "MAX_LEXICON_WORD_CHARS",
    "MAX_MESSAGE_BYTES",
    "MAX_QUEUED_REQUESTS",
    "MAX_REQUEST_ID_CHARS",
    "MAX_SPEED",
    "MAX_TEXT_CHARS",
    "MAX_VOICE_PARTS",
    "MAX_VOICE_WEIGHT",
    "MIN_SPEED",
    "PING_PATH",
    "SAMPLE_WIDTH_BYTES",
    "SETTING_REFUSALS",
    "SUPPORTED_SAMPLE_RATES",
    "VOICES_PATH",
    "WIRE_AUDIO_FORMATS",
    "WS_PATH",
    "AudioData",
    "AudioFormatName",
    "Cancel",
    "Cancelled",
    "ClientMessage",
    "Close",
    "ControlFrame",
    "ErrorCode",
    "Invocation",
    "InvocationFormat",
    "ProtocolError",
    "ServerError",
    "ServerMessage",
    "SessionStarted",
    "SynthesisCompleted",
    "SynthesisStarted",
    "SynthesizeRequest",
    "VoiceMix",
    "Word",
    "WordTimings",
    "audio_ms",
    "control_object",
    "decode_text",
    "finite_number",
    "http_status_code",
    "is_voice_mix",
    "json_text",
    "json_type",
    "parse_audio_format",
    "parse_client_message",
    "parse_control",
    "parse_error_body",
    "parse_invocation",
    "parse_json_object",
    "parse_lexicon",
    "parse_speed",
    "parse_sse_data",
    "parse_synthesize_fields",
    "parse_voice",
    "shown",
    "sse_event",
    "utf8_encodable",
    "voice_names",
]
