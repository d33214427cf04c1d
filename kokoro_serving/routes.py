"""What both servers say for a path they do not serve or a method they do not take there.

Starlette answers those in plain text, without a code; each server writes this refusal in its own
format (the model server's JSON error frame, the agent app's SSE ``error``); what it says is decided here.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import Request

from strands_kokoro.protocol import ErrorCode

ROUTE_STATUSES = (404, 405)


@dataclass(frozen=True, slots=True)
class RouteRefusal:
    """What to answer: the status, the code and message, and the headers to keep (a 405's ``Allow``)."""

    status: int
    code: ErrorCode
    message: str
    headers: dict[str, str]


def route_refusal(request: Request, exc: Exception) -> RouteRefusal:
    """The refusal for Starlette's 404 or 405 ``exc`` (register the handler for :data:`ROUTE_STATUSES`)."""
    assert isinstance(exc, HTTPException) and exc.status_code in ROUTE_STATUSES
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        return RouteRefusal(404, ErrorCode.NOT_FOUND, "no such path", headers)
    message = f"{request.method} is not served at {request.url.path}"
    return RouteRefusal(405, ErrorCode.METHOD_NOT_ALLOWED, message, headers)
