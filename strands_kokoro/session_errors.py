"""The codes a speech session (:mod:`strands_kokoro.sessions`) fails or refuses with, each written here once.

A session reports a fault of its own transport, or of the endpoint string that chose it, with one of
these; a refusal of the model server's keeps the server's code (:class:`strands_kokoro.protocol.ErrorCode`).
Callers switch on the code (a listener's app explains a setup failure by it; a retry reads the error's
``retryable``), never on the message text.

Why a module of its own, outside the ``sessions`` package: the turn's table of setup failures
(:data:`strands_kokoro.turn_errors.SETUP_FAILURES`) is keyed by these codes, and the sessions already
import the turn's codes; a table here, importing nothing, keeps both sides free of an import cycle.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["SessionErrorCode"]


class SessionErrorCode(StrEnum):
    """Stable codes of :class:`~strands_kokoro.sessions.EndpointError`, of the SageMaker sessions' errors
    and of the refusals a session makes up when the stream it read was broken."""

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
