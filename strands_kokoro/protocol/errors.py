"""The wire's error codes and the refusal a server answers a bad client message with.

Why a table: clients switch on ``code``, never on the message, so each code is a member of
:class:`ErrorCode`, written once here; a code spelled in two places drifts.
"""

from __future__ import annotations

from enum import StrEnum

from strands_kokoro.errors import CodedError
from strands_kokoro.protocol.frames import ServerError


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


# A refusal whose body carried no coded error (a proxy's page, a gateway's 502) is named by its HTTP
# status: ``http_502``. A client tells these from the server's own codes by the prefix.
HTTP_STATUS_CODE_PREFIX = "http_"


def http_status_code(status: int) -> str:
    """The code of a refusal that carried no coded body: ``http_<status>``."""
    return f"{HTTP_STATUS_CODE_PREFIX}{status}"


class ProtocolError(CodedError):
    """A client message the server refuses: a stable code, a message written for humans, and the
    request it is about (if the message named one). Sending the same message again cannot help."""

    code: ErrorCode

    def __init__(self, code: ErrorCode, message: str, request_id: str | None = None) -> None:
        super().__init__(code, message)
        self.request_id = request_id

    def frame(self) -> ServerError:
        return ServerError(self.request_id, self.code, self.message)
