"""The agent app's errors: its codes, written once, the one mapping from an exception to its answer, and
the settings it cannot use.

Callers switch on ``code``, so each is a member of :class:`AppErrorCode` (or the wire's own
:class:`strands_kokoro.protocol.ErrorCode` where it means the same fault). :func:`answer_for` maps an
exception to ``(code, HTTP status, retryable)``: a coded error keeps its code, anything else is
``fallback`` (its trace to the log). :class:`TurnRefused` refuses a turn before it starts.
:class:`SettingError` is raised while the app is built, never on a request; launchers catch
:data:`SETTING_ERRORS` and stop before listening, with one line and exit status 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from strands_kokoro.errors import CodedError, ListeningErrorCode, TurnErrorCode
from strands_kokoro.events import ErrorEvent, error
from strands_kokoro.protocol import ErrorCode
from strands_kokoro.sessions import EndpointError


class AppErrorCode(StrEnum):
    """Stable codes of the agent app's ``error`` events and frames."""

    # The caller's request.
    BAD_JSON = ErrorCode.BAD_JSON
    BAD_UTF8 = ErrorCode.BAD_UTF8
    PAYLOAD_TOO_LARGE = "payload_too_large"  # POST body over the app's limit (HTTP 413)
    BAD_PAYLOAD = "bad_payload"  # valid JSON, but not an object or a field has the wrong type
    UNKNOWN_TYPE = ErrorCode.UNKNOWN_TYPE  # a /ws message that is neither a turn nor a cancel
    MISSING_PROMPT = "missing_prompt"
    PROMPT_TOO_LONG = "prompt_too_long"
    UNKNOWN_MODE = "unknown_mode"
    BAD_VOICE = ErrorCode.BAD_VOICE
    FORMAT_UNAVAILABLE = ErrorCode.FORMAT_UNAVAILABLE  # a compressed format without PyAV here
    TOO_MANY_TURNS = "too_many_turns"  # a /ws connection already has its queue of turns
    # The user's voice on /ws (the audio's own faults are the cascade's ListeningErrorCode).
    UNSUPPORTED_AUDIO = ListeningErrorCode.UNSUPPORTED_AUDIO  # audio_start with another rate or format
    AUDIO_NOT_ANNOUNCED = "audio_not_announced"  # a binary audio frame with no microphone open
    MICROPHONE_OPEN = "microphone_open"  # audio_start while one is open on the connection
    LISTENING_UNAVAILABLE = "listening_unavailable"  # the app was installed without the listen extra
    # The conversation the turn belongs to.
    BAD_SESSION_ID = "bad_session_id"
    CONVERSATION_BUSY = "conversation_busy"  # another turn of it is still running: retry after it
    CONVERSATION_UNAVAILABLE = "conversation_unavailable"  # its store cannot be reached or read
    # Settings, refused while the app is built (a launcher prints them and exits 2).
    BAD_CONVERSATION_SETTING = "bad_conversation_setting"
    BAD_CONVERSATIONS_LOCATION = "bad_conversations_location"
    # The app's own faults: logged with their trace, coded for the caller.
    AGENT_FAILED = TurnErrorCode.AGENT_FAILED  # the turn's own code (KokoroSpeech's event)
    INTERNAL_ERROR = ErrorCode.INTERNAL_ERROR


# What each code is answered with over HTTP, where it is answered before the event stream starts; every
# other code arrives as an event of a 200 stream.
HTTP_STATUS: dict[str, int] = {
    AppErrorCode.BAD_JSON: 400,
    AppErrorCode.PAYLOAD_TOO_LARGE: 413,
}


@dataclass(frozen=True, slots=True)
class Answer:
    """What the app says about one failure: its code, the HTTP status, and whether a retry can help."""

    code: str
    status: int
    retryable: bool


def answer_for(exc: BaseException, fallback: AppErrorCode = AppErrorCode.INTERNAL_ERROR) -> Answer:
    """The answer to ``exc``: a :class:`CodedError` keeps its code and its ``retryable``; anything else is
    ``fallback``, a fault of the app's own that no retry of the same request is known to mend."""
    if isinstance(exc, CodedError):
        return Answer(exc.code, HTTP_STATUS.get(exc.code, 200), exc.retryable)
    return Answer(fallback, HTTP_STATUS.get(fallback, 200), False)


class TurnRefused(CodedError, ValueError):
    """A turn the app refuses before it starts: a payload it cannot read, a conversation it cannot use.
    ``code`` is the stable ``error`` event code; ``retryable`` says whether the same turn may be taken
    later (``conversation_busy``)."""

    def event(self) -> ErrorEvent:
        """The architecture §4 ``error`` event for this refusal."""
        return error(self.code, self.message)


class SettingError(ValueError):
    """A setting the app cannot use (the model, a tool, ...); the message names the setting and what a
    valid one looks like."""


class ConversationSettingError(CodedError, SettingError):
    """A conversation setting cannot be understood; raised when the app is built, not on a request.

    Coded like a turn's refusal: ``bad_conversations_location`` for where conversations live,
    ``bad_conversation_setting`` for their bounds.
    """

    def __init__(self, message: str, code: str = AppErrorCode.BAD_CONVERSATION_SETTING) -> None:
        super().__init__(code, message)


# What a launcher catches around building the app: the app's own settings and the speech endpoint.
SETTING_ERRORS: tuple[type[Exception], ...] = (SettingError, EndpointError)
