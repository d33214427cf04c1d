"""Browsers may not drive the model server: refuse cross-origin WebSockets and local-only POST tricks.

A page cannot read a cross-origin answer, but starting synthesis is the harm. A WebSocket handshake with
an ``Origin`` is refused (403, ``origin_not_allowed``) unless named by ``--allow-origin``: SageMaker and
the Python clients send none. On a loopback connection a POST is refused for a non-JSON body (415), a
``Host`` that is not a loopback name (421) or a foreign ``Origin`` (403), judged by
:mod:`kokoro_serving.local_callers`; in a container bound to 0.0.0.0 these never apply. Refusals are the
server's coded errors, in OpenAI's shape on OpenAI's paths.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from kokoro_serving.local_callers import (
    ORIGIN_NOT_ALLOWED,
    STATUS,
    header,
    local_post_refusal,
    normalize_origin,
)
from strands_kokoro.protocol import INVOCATIONS_PATH, WS_PATH, ServerError
from tts_container.routes import openai_speech

# The POST routes that start synthesis (each one a local page could otherwise drive).
GUARDED_POSTS = frozenset({INVOCATIONS_PATH, openai_speech.SPEECH_PATH})


class LocalRequestGuard:
    """Pure ASGI middleware for the model server (see the module docstring for what it refuses)."""

    def __init__(self, app: ASGIApp, *, allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed_origins = frozenset(normalize_origin(o) for o in allowed_origins)

    def refusal(self, scope: Scope) -> tuple[str, str] | None:
        """``(code, message)`` when this request must be refused, else None."""
        if scope["type"] == "websocket" and scope.get("path") == WS_PATH:
            origin = header(scope, b"origin")
            if origin is not None and normalize_origin(origin) not in self.allowed_origins:
                return ORIGIN_NOT_ALLOWED, "this origin may not open a session (see --allow-origin)"
            return None
        if scope.get("path") not in GUARDED_POSTS:
            return None
        return local_post_refusal(
            scope, origin_allowed=self.allowed_origins.__contains__, server="model server"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = self.refusal(scope) if scope["type"] in ("http", "websocket") else None
        if refused is None:
            await self.app(scope, receive, send)
            return
        code, message = refused
        if str(scope.get("path", "")).startswith(openai_speech.PREFIX):
            body = openai_speech.error_body(code, message, status=STATUS[code])
        else:
            body = ServerError(None, code, message).to_wire().encode("utf-8")
        if scope["type"] == "websocket" and "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008})  # the server answers the handshake 403
            return
        prefix = "websocket." if scope["type"] == "websocket" else ""
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": f"{prefix}http.response.start", "status": STATUS[code], "headers": headers})
        await send({"type": f"{prefix}http.response.body", "body": body})
