"""The browser voice player: the page (``static/``) and :func:`with_page`, serving it beside an agent app.

Why a wrapper instead of new routes in :mod:`agentcore_app.app`: the AgentCore contract is exactly
``POST /invocations``, ``GET /ping`` and the WebSocket ``/ws``; the deployed app must not grow anything
else. :func:`with_page` wraps an ASGI app (any agent app, or a test server) with the page under
``/player/`` and CORS for local origins, and passes every other request through untouched. Served from
the agent app's own origin, the page needs no CORS at all in the usual case. ``agent-infra serve``
(:mod:`agentcore_app.local.commands`) runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from agentcore_app.local_guard import LOCAL_ORIGIN_REGEX, LocalCallerGuard
from agentcore_app.runtime_session import SESSION_HEADER

STATIC_DIR = Path(__file__).parent / "static"
PAGE_PATH = "/player/"
# Local origins (LOCAL_ORIGIN_REGEX: another dev server, the tests' page server) may call the agent app;
# remote origins may not unless named with --cors-origin: a local agent app is not a public API.


def with_page(app: ASGIApp, *, cors_origins: Sequence[str] = ()) -> Starlette:
    """``app`` plus the player at ``/player/`` (``/`` and ``/player`` redirect there), CORS for local
    origins, and the local-caller guard (:mod:`agentcore_app.local_guard`) that also admits
    ``cors_origins``."""

    async def to_page(request: Request) -> Response:
        return RedirectResponse(PAGE_PATH)

    return Starlette(
        routes=[
            Route("/", to_page, methods=["GET"]),
            Route(PAGE_PATH.rstrip("/"), to_page, methods=["GET"]),  # the page's address without its slash
            Mount(PAGE_PATH.rstrip("/"), StaticFiles(directory=STATIC_DIR, html=True)),
            Mount("/", app),  # /invocations, /ping and anything else the agent app answers
        ],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_origin_regex=LOCAL_ORIGIN_REGEX,
                allow_methods=["GET", "POST"],
                # The player sends AgentCore's session header: the conversation it is having.
                allow_headers=["content-type", "accept", SESSION_HEADER.lower()],
            ),
            # Inside CORS, so a local page can read a refusal. It lets the --cors-origin origins in too;
            # the agent app's own guard then leaves the request alone.
            Middleware(LocalCallerGuard, extra_origins=cors_origins),
        ],
    )


def page_url(base_url: str, agent_url: str | None = None) -> str:
    """The page's address; ``agent_url`` points it at an agent app on another origin."""
    url = base_url.rstrip("/") + PAGE_PATH
    return f"{url}?agent={agent_url}" if agent_url else url
