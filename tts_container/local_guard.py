"""Browsers may not drive the model server: refuse cross-origin WebSockets and local-only POST tricks.

Why: a model server on a laptop listens on 127.0.0.1, and every web page the user opens can reach that
address. A page cannot read a cross-origin answer, but it does not need to: starting synthesis is the
harm (CPU for minutes, a queue full of someone else's text). Three doors are closed here:

- **WebSocket with an ``Origin``.** Browsers always send ``Origin`` on a WebSocket handshake and the
  server gets no CORS protection there, so any ``Origin`` is refused (HTTP 403, ``origin_not_allowed``)
  unless named with ``--allow-origin``. SageMaker's router and the Python clients send none, so they are
  never affected, wherever the server runs.
- **POST /invocations that is not ``application/json``** on a loopback connection: a cross-site
  ``fetch(..., {mode: "no-cors"})`` can only send ``text/plain`` (or a form) without a CORS preflight,
  which this server never grants; requiring JSON forces that preflight (415, ``bad_content_type``).
- **A ``Host`` that is not a loopback name** on a loopback connection: DNS rebinding points an
  attacker's name at 127.0.0.1 and then the page is "same-origin" with us (421, ``host_not_allowed``).
  A POST that carries a foreign ``Origin`` is refused too (403).

"Loopback connection" is read per connection from ``scope["server"]`` (the address the client reached):
in a SageMaker container the server binds 0.0.0.0 and its callers arrive on the network address, so the
POST checks never apply there. Refusals are the same coded error objects as every other refusal.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from strands_kokoro.protocol import INVOCATIONS_PATH, WS_PATH, ServerError

ORIGIN_NOT_ALLOWED = "origin_not_allowed"
BAD_CONTENT_TYPE = "bad_content_type"
HOST_NOT_ALLOWED = "host_not_allowed"
_STATUS = {ORIGIN_NOT_ALLOWED: 403, BAD_CONTENT_TYPE: 415, HOST_NOT_ALLOWED: 421}


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower-case bytes), decoded as Latin-1, or None."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def is_loopback_address(host: str) -> bool:
    """True for 127.0.0.0/8 and ::1 (``scope["server"]``'s host, or a ``Host`` header's name part)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower().rstrip(".") == "localhost"


def host_name(host_header: str) -> str:
    """``[::1]:8080`` → ``::1``, ``localhost:8080`` → ``localhost``."""
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


def on_loopback(scope: Scope) -> bool:
    """Whether this connection arrived on a loopback address of the server."""
    server = scope.get("server")
    return server is not None and isinstance(server[0], str) and is_loopback_address(server[0])


def media_type(scope: Scope) -> str:
    """``application/json; charset=utf-8`` → ``application/json``; "" when there is no Content-Type."""
    return (header(scope, b"content-type") or "").partition(";")[0].strip().lower()


def normalize_origin(origin: str) -> str:
    return origin.strip().rstrip("/").lower()


class LocalRequestGuard:
    """Pure ASGI middleware for the model server (see the module docstring for what it refuses)."""

    def __init__(self, app: ASGIApp, *, allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed_origins = frozenset(normalize_origin(o) for o in allowed_origins)

    def _origin_refused(self, scope: Scope) -> bool:
        origin = header(scope, b"origin")
        return origin is not None and normalize_origin(origin) not in self.allowed_origins

    def refusal(self, scope: Scope) -> tuple[str, str] | None:
        """``(code, message)`` when this request must be refused, else None."""
        if scope["type"] == "websocket" and scope.get("path") == WS_PATH:
            if self._origin_refused(scope):
                return ORIGIN_NOT_ALLOWED, "this origin may not open a session (see --allow-origin)"
            return None
        if scope["type"] != "http" or scope.get("path") != INVOCATIONS_PATH or not on_loopback(scope):
            return None
        if scope.get("method") != "POST":
            return None
        host = header(scope, b"host")
        if host is None or not is_loopback_address(host_name(host)):
            return HOST_NOT_ALLOWED, "a local model server answers only requests addressed to a loopback host"
        if self._origin_refused(scope):
            return ORIGIN_NOT_ALLOWED, "this origin may not call the model server (see --allow-origin)"
        if media_type(scope) != "application/json":
            return BAD_CONTENT_TYPE, "the body must be sent as Content-Type: application/json"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = self.refusal(scope) if scope["type"] in ("http", "websocket") else None
        if refused is None:
            await self.app(scope, receive, send)
            return
        code, message = refused
        body = ServerError(None, code, message).to_wire().encode("utf-8")
        if scope["type"] == "websocket" and "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008})  # the server answers the handshake 403
            return
        prefix = "websocket." if scope["type"] == "websocket" else ""
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": f"{prefix}http.response.start", "status": _STATUS[code], "headers": headers})
        await send({"type": f"{prefix}http.response.body", "body": body})
