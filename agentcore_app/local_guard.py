"""A locally bound agent app answers only its own pages: no cross-site turns, no DNS rebinding.

On a loopback connection, ``POST /invocations`` must carry ``Content-Type: application/json`` (415
``bad_content_type``), a loopback ``Host`` (421 ``host_not_allowed``) and no ``Origin``, the same, a local
one or one named with ``--cors-origin`` (403 ``origin_not_allowed``); ``/ws`` gets the ``Host`` and
``Origin`` checks, a refused handshake answered with the status and the ``error`` event. A refusal is one
SSE ``error`` event. AgentCore's callers (the container's network address) are not judged. A request is
judged once, by the first guard. Why each check: architecture §10, "The local guard".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from kokoro_serving.errors import STATUS
from kokoro_serving.local_callers import header, local_post_refusal, local_socket_refusal
from strands_kokoro import events
from strands_kokoro.protocol import sse_event

__all__ = ["CHECKED", "INVOCATIONS_PATH", "LOCAL_ORIGIN_REGEX", "LocalCallerGuard"]

# A page served by another local port (another dev server, the tests' page server) may call the agent app.
LOCAL_ORIGIN_REGEX = r"https?://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?"
INVOCATIONS_PATH = "/invocations"
WS_PATH = "/ws"
CHECKED = "strands_kokoro.local_guard"  # scope key: an outer guard already judged this request
_LOCAL_ORIGIN = re.compile(LOCAL_ORIGIN_REGEX)


class LocalCallerGuard:
    """Pure ASGI middleware for the agent app (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, extra_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.extra_origins = frozenset(o.strip().rstrip("/").lower() for o in extra_origins)

    def refusal(self, scope: Scope) -> tuple[str, str] | None:
        """``(code, message)`` when this request must be refused, else None."""
        if scope.get("path") != (INVOCATIONS_PATH if scope["type"] == "http" else WS_PATH):
            return None
        host = header(scope, b"host") or ""
        scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "http"), scope.get("scheme", "http"))
        same = f"{scheme}://{host}".lower()

        def allowed(origin: str) -> bool:
            return (
                origin == same or origin in self.extra_origins or _LOCAL_ORIGIN.fullmatch(origin) is not None
            )

        judge = local_socket_refusal if scope["type"] == "websocket" else local_post_refusal
        return judge(scope, origin_allowed=allowed, server="agent app")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get(CHECKED):
            await self.app(scope, receive, send)
            return
        scope[CHECKED] = True
        refused = self.refusal(scope)
        if refused is None:
            await self.app(scope, receive, send)
            return
        code, message = refused
        if scope["type"] == "websocket":
            await _refuse_handshake(scope, send, code, message)
            return
        body = sse_event(events.error(code, message))
        headers = [(b"content-type", b"text/event-stream"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": STATUS[code], "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _refuse_handshake(scope: Scope, send: Send, code: str, message: str) -> None:
    """Answer a WebSocket handshake with the status and the ``error`` event (the ASGI denial response);
    a server without that extension can only close it (the client sees a 403)."""
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    body = json.dumps(events.error(code, message)).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "websocket.http.response.start", "status": STATUS[code], "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})
