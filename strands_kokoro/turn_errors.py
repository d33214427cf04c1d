"""The codes a turn itself says things went wrong with, each written here once, and where its speech is.

A ``speech_error`` carries either a code of the model server's (:class:`~strands_kokoro.protocol.ErrorCode`,
passed on as the server wrote it, or the turn's own ``overloaded``/``internal_error``) or one of
:class:`TurnErrorCode`'s. Clients switch on these, never on the message text.
"""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Final

from strands_kokoro.session_errors import SessionErrorCode

__all__ = ["INTERRUPTED", "SETUP_FAILURES", "SpeechState", "TurnErrorCode"]


class TurnErrorCode(StrEnum):
    """Codes of the events a turn raises about its own speech session and agent."""

    # ``speech_error``: the session dropped after it had spoken, and reconnecting did not restore it.
    CONNECTION_LOST = "connection_lost"
    # ``speech_error``: no speech endpoint could be reached at all.
    SPEECH_UNAVAILABLE = "speech_unavailable"
    # ``speech_error``: the session could not be set up (bad credentials, a broken transport...).
    SPEECH_SETUP_FAILED = "speech_setup_failed"
    # ``error``: the agent's own turn failed (the model, a tool); an ``agent_end`` still follows.
    AGENT_FAILED = "agent_failed"


class SpeechState(Enum):
    """Where the turn's speech is: speaking, or stopped for the rest of the turn (the text goes on)."""

    SPEAKING = "speaking"
    INTERRUPTED = "interrupted"  # the listener spoke over it: nothing more is said
    FAILED = "failed"  # a failure its speech_error named: nothing more is said


# Why speech stops for the rest of a turn, besides a coded failure: the listener interrupted.
INTERRUPTED: Final = "interrupted"

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
