"""The browser voice player: the page (``static/``) and :func:`with_page`, serving it beside an agent app.

Why a wrapper instead of new routes in :mod:`agentcore_app.app`: the AgentCore contract is exactly
``POST /invocations`` and ``GET /ping``; the deployed app must not grow anything else. :func:`with_page`
wraps an ASGI app (any agent app, or a test server) with the page under ``/player/`` and CORS for local
origins, and passes every other request through untouched. Served from the agent app's own origin, the
page needs no CORS at all in the usual case. ``agent-infra serve`` (:mod:`cdk.local_commands`) runs it.
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

STATIC_DIR = Path(__file__).parent / "static"
PAGE_PATH = "/player/"
# A page served by another local port (another dev server, the tests' page server) may call the agent app.
# Remote origins may not unless named with --cors-origin: a local agent app is not a public API.
LOCAL_ORIGIN_REGEX = r"https?://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?"


def with_page(app: ASGIApp, *, cors_origins: Sequence[str] = ()) -> Starlette:
    """``app`` plus the player at ``/player/`` (``/`` redirects there) and CORS for local origins."""

    async def to_page(request: Request) -> Response:
        return RedirectResponse(PAGE_PATH)

    return Starlette(
        routes=[
            Route("/", to_page, methods=["GET"]),
            Mount(PAGE_PATH.rstrip("/"), StaticFiles(directory=STATIC_DIR, html=True)),
            Mount("/", app),  # /invocations, /ping and anything else the agent app answers
        ],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_origin_regex=LOCAL_ORIGIN_REGEX,
                allow_methods=["GET", "POST"],
                allow_headers=["content-type", "accept"],
            )
        ],
    )


def page_url(base_url: str, agent_url: str | None = None) -> str:
    """The page's address; ``agent_url`` points it at an agent app on another origin."""
    url = base_url.rstrip("/") + PAGE_PATH
    return f"{url}?agent={agent_url}" if agent_url else url
