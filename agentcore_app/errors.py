"""The agent app's errors: its codes, written once, the one mapping from an exception to its answer, and
the settings it cannot use.

Two audiences read these codes: the callers of POST /invocations (an SSE ``error`` event, architecture §4)
and of ``/ws`` (an ``error`` frame). They switch on ``code``, never on the message, so each code is a
member of :class:`AppErrorCode` and nowhere else a string. Codes that mean what the model server's mean
(``bad_json``, ``bad_utf8``, ``bad_voice``, ``unknown_type``, ``format_unavailable``, ``internal_error``)
are the wire's own members (:class:`strands_kokoro.protocol.ErrorCode`), so a client reads one word for
one fault.

:func:`answer_for` is the one mapping from an exception to ``(code, HTTP status, retryable)``, as httpx
keeps one table from foreign errors to its own: a coded error keeps its code; anything else is a fault of
the app's own, answered as ``fallback`` (its trace goes to the log, never to the caller).

:class:`TurnRefused` is a turn the app refuses before it starts (its payload, or the conversation it
belongs to), answered with its coded ``error`` event and nothing else.

:class:`SettingError` is a setting the app cannot use (the model, a tool, where conversations live),
raised while the app is built (:func:`agentcore_app.app.create_app`, or importing ``agentcore_app.app``,
whose module-level app reads the environment), never on a request. Every launcher (``python -m
agentcore_app``, ``agent-infra demo|serve``) catches :data:`SETTING_ERRORS` around building the app and
stops before it listens, with one line that names the setting and exit status 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from strands_kokoro.errors import CodedError, TurnErrorCode
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
