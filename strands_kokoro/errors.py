"""The library's coded errors: one base, and each code a session or a turn fails with, written here once.

Every error carries a ``code`` a program switches on, a ``message`` for a person (never ``str(exc)`` of
an internal exception) and ``retryable``: whether reconnecting or re-sending can help. Retry decisions
read ``retryable``, never the class. Three tables: the model server's
(:class:`strands_kokoro.protocol.ErrorCode`), :class:`SessionErrorCode` (a session's transport or endpoint
string) and :class:`TurnErrorCode` (a turn's own). This module imports nothing of the library, so every
layer imports it (architecture §9, "Coded errors").
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["SETUP_FAILURES", "CodedError", "ListeningErrorCode", "SessionErrorCode", "TurnErrorCode"]


class CodedError(Exception):
    """An error with a stable ``code``, a human ``message`` and whether a retry can help."""

    retryable: bool = False

    def __init__(self, code: str, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.code = code  # a StrEnum member stays one: a subclass may narrow ``code`` to its table
        self.message = message
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class SessionErrorCode(StrEnum):
    """Stable codes of :class:`~strands_kokoro.sessions.EndpointError`, of the SageMaker sessions' errors
    and of the refusals a session makes up when the stream it read was broken.

    A refusal of the model server's keeps the server's code (:class:`strands_kokoro.protocol.ErrorCode`).
    """

    # The endpoint string (:func:`strands_kokoro.sessions.check_endpoint`): the same string fails again.
    UNKNOWN_ENDPOINT_SCHEME = "unknown_endpoint_scheme"
    BAD_ENDPOINT = "bad_endpoint"  # no host, or no SageMaker endpoint name
    BAD_ENDPOINT_OPTION = "bad_endpoint_option"  # an option the chosen session does not take
    MISSING_DEPENDENCY = "missing_dependency"  # the session's extra is not installed
    # SageMaker: the stream is gone (AWS's own code travels beside, as ``aws_code``).
    MODEL_STREAM_ERROR = "model_stream_error"  # the container's stream broke or timed out
    INTERNAL_STREAM_FAILURE = "internal_stream_failure"
    MODEL_ERROR = "model_error"  # the container refused the connection
    ENDPOINT_UNAVAILABLE = "endpoint_unavailable"  # validation, throttling, service unavailable
    CONNECTION_FAILED = "connection_failed"
    FRAME_TOO_LARGE = "frame_too_large"  # a frame joined from PARTIAL parts grew past the session's bound
    # SageMaker, not worth a reopen: the same configuration fails the same way.
    NO_CREDENTIALS = "no_credentials"
    NO_REGION = "no_region"
    UNKNOWN_REGION = "unknown_region"  # in no partition botocore knows
    NOT_OPEN = "not_open"  # used outside ``async with session:``
    # A request's refusal made up by the session (an ``error`` event): the stream it read was broken.
    BAD_AUDIO = "bad_audio"  # an SSE audio event that did not carry base64
    INCOMPLETE_STREAM = "incomplete_stream"  # the response ended before the request completed


class TurnErrorCode(StrEnum):
    """Codes of the events a turn raises about its own speech session and agent.

    A ``speech_error`` carries either a code of the model server's (passed on as the server wrote it, or
    the turn's own ``overloaded``/``internal_error``) or one of these.
    """

    # ``speech_error``: the session dropped after it had spoken, and reconnecting did not restore it.
    CONNECTION_LOST = "connection_lost"
    # ``speech_error``: no speech endpoint could be reached at all.
    SPEECH_UNAVAILABLE = "speech_unavailable"
    # ``speech_error``: the session could not be set up (bad credentials, a broken transport...).
    SPEECH_SETUP_FAILED = "speech_setup_failed"
    # ``error``: the agent's own turn failed (the model, a tool); an ``agent_end`` still follows.
    AGENT_FAILED = "agent_failed"


class ListeningErrorCode(StrEnum):
    """Codes of the ``listening_error`` events a cascade (:mod:`strands_kokoro.listening`) raises about the
    user's input and its conversation; the conversation goes on after each."""

    # The audio is not what the cascade takes (16 kHz mono s16le PCM): dropped.
    UNSUPPORTED_AUDIO = "unsupported_audio"  # another format or sample rate
    NOT_AUDIO = "not_audio"  # bytes that cannot be s16le samples (an odd length, not bytes)
    # The user spoke past the longest utterance the cascade transcribes: the turn ends there.
    UTTERANCE_TOO_LONG = "utterance_too_long"
    # Speech-to-text failed on an utterance: the turn is dropped, listening goes on.
    TRANSCRIPTION_FAILED = "transcription_failed"
    # The input came faster than real time and filled the buffer: the newest audio is dropped.
    AUDIO_OVERRUN = "audio_overrun"
    # Something the cascade does not take (an image block, a tool result nobody asked for).
    UNSUPPORTED_INPUT = "unsupported_input"
    # The conversation's memory (the app's store) cannot be held for an answer: it is answered from the
    # history heard on this connection and not kept.
    MEMORY_UNAVAILABLE = "memory_unavailable"


# What a listener's app can say when a session cannot even be set up, by the code the session raised.
SETUP_FAILURES: Final[dict[str, str]] = {
    SessionErrorCode.UNKNOWN_ENDPOINT_SCHEME: "the speech endpoint is not a ws://, http(s)://, sagemaker: or "
    "sagemaker-batch: address",
    SessionErrorCode.BAD_ENDPOINT: "the speech endpoint names no host, or no SageMaker endpoint",
    SessionErrorCode.BAD_ENDPOINT_OPTION: "the speech endpoint has an option its session does not take",
    SessionErrorCode.MISSING_DEPENDENCY: "speech over SageMaker needs the 'sagemaker' extra installed",
    SessionErrorCode.NO_REGION: "speech over SageMaker needs an AWS region (AWS_REGION, or ?region= on "
    "the endpoint)",
    SessionErrorCode.NO_CREDENTIALS: "speech over SageMaker found no AWS credentials",
    SessionErrorCode.UNKNOWN_REGION: "speech over SageMaker names a region in no partition botocore knows",
}
