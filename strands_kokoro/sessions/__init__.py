"""Sessions to a Kokoro server, chosen by endpoint string (see :func:`open_session`).

- ``ws://`` / ``wss://``            the server's WebSocket route (persistent, sentence by sentence)
- ``http://`` / ``https://``        POST /invocations, one streamed request per sentence
- ``sagemaker:<name>[?region=..]``  SageMaker bidirectional streaming (HTTP/2 SDK)
- ``sagemaker-batch:<name>[?..]``   SageMaker ``invoke_endpoint_with_response_stream`` (boto3)

The SageMaker modules pull optional dependencies and are imported only when such an endpoint is opened.
"""

from __future__ import annotations

import importlib
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from strands_kokoro.errors import CodedError, SessionErrorCode
from strands_kokoro.protocol import (
    AudioData,
    Cancelled,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    WordTimings,
)
from strands_kokoro.sessions.base import SessionClosedError, SessionEvent, SpeechSession

__all__ = [
    "AudioData",
    "Cancelled",
    "EndpointError",
    "ServerError",
    "SessionClosedError",
    "SessionEvent",
    "SpeechSession",
    "SynthesisCompleted",
    "SynthesisStarted",
    "SynthesizeRequest",
    "WordTimings",
    "check_endpoint",
    "open_session",
]

_SAGEMAKER_MODULES = {
    "sagemaker": "strands_kokoro.sessions.sagemaker",
    "sagemaker-batch": "strands_kokoro.sessions.sagemaker_batch",
}
ENDPOINT_SCHEMES: tuple[str, ...] = ("ws", "wss", "http", "https", *_SAGEMAKER_MODULES)


class EndpointError(CodedError, ValueError):
    """An endpoint string no session understands (not retryable: the same string fails again)."""


def parse_sagemaker_endpoint(endpoint: str) -> tuple[str, dict[str, str]]:
    """``sagemaker:my-endpoint?region=us-west-2`` → ``("my-endpoint", {"region": "us-west-2"})``."""
    _, _, rest = endpoint.partition(":")
    name, _, query = rest.partition("?")
    name = name.strip().lstrip("/")
    if not name:
        raise EndpointError(
            SessionErrorCode.BAD_ENDPOINT, f"{endpoint!r} names no SageMaker endpoint (sagemaker:<name>)"
        )
    return name, dict(parse_qsl(query))


def check_endpoint(endpoint: str) -> str:
    """The scheme that picks ``endpoint``'s session; an :class:`EndpointError` when none would open it.

    Why apart from :func:`open_session`: it connects nothing and imports nothing, so an app checks its
    setting when it starts (``unknown_endpoint_scheme``, or ``bad_endpoint`` for an address without a
    host or a SageMaker endpoint without a name) instead of failing its first turn. Options a session
    may refuse are checked only when it is built, by the session's own module.
    """
    scheme = endpoint.partition(":")[0].lower() if ":" in endpoint else ""
    if scheme not in ENDPOINT_SCHEMES:
        raise EndpointError(
            SessionErrorCode.UNKNOWN_ENDPOINT_SCHEME,
            f"cannot open {endpoint!r}: expected ws://, wss://, http://, https://, sagemaker:<name> "
            "or sagemaker-batch:<name>",
        )
    if scheme in _SAGEMAKER_MODULES:
        parse_sagemaker_endpoint(endpoint)
    elif not urlsplit(endpoint).hostname:  # "ws://", "http:///x": nothing to connect to, ever
        raise EndpointError(SessionErrorCode.BAD_ENDPOINT, f"cannot open {endpoint!r}: it names no host")
    return scheme


def open_session(endpoint: str, **options: Any) -> SpeechSession:
    """Build the session for ``endpoint`` (not yet connected: use it as ``async with``).

    ``options`` go to the chosen session's constructor (e.g. ``open_timeout`` for WebSockets,
    ``timeout`` for HTTP); for SageMaker endpoints the query string (``region=...``) is merged in.
    """
    scheme = check_endpoint(endpoint)
    if scheme in ("ws", "wss"):
        from strands_kokoro.sessions.ws import WebSocketSession

        return WebSocketSession(endpoint, **options)
    if scheme in ("http", "https"):
        from strands_kokoro.sessions.http import HttpSession

        return HttpSession(endpoint, **options)
    # Whatever else passed the check is a SageMaker endpoint.
    name, query = parse_sagemaker_endpoint(endpoint)
    try:
        module = importlib.import_module(_SAGEMAKER_MODULES[scheme])
    except ImportError as exc:
        raise EndpointError(
            SessionErrorCode.MISSING_DEPENDENCY,
            f"{scheme}: endpoints need the 'sagemaker' extra (pip install 'strands-kokoro[sagemaker]')",
        ) from exc
    try:
        session: SpeechSession = module.session_for(name, **{**query, **options})
    except TypeError as exc:
        if not query:
            raise
        # ``?regoin=...``: a typo in the endpoint string is the user's, not a bug; say which options.
        raise EndpointError(
            SessionErrorCode.BAD_ENDPOINT_OPTION,
            f"{scheme}: endpoints take no option among {', '.join(sorted(query))}",
        ) from exc
    return session
