"""``agent-infra serve --local``: the browser voice player, with the model server and agent app behind it.

One command gives a newcomer a page to talk to: it starts the Kokoro model server (unless
``--speech-endpoint`` names a running one) and the agent app on 127.0.0.1, and serves the page from the
agent app's own origin, so the page needs no CORS at all in the usual case.

Why a wrapper instead of new routes in :mod:`agentcore_app.app`: the AgentCore contract is exactly
``POST /invocations`` and ``GET /ping``; the deployed app must not grow anything else. :func:`with_page`
wraps an ASGI app (any agent app, or a test server) with the page under ``/player/`` and CORS for
local origins, and passes every other request through untouched.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import uvicorn
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-infra serve", description="Serve the browser voice player with a local agent stack."
    )
    parser.add_argument(
        "--local", action="store_true", help="run the model server and the agent app here (the default)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="page + agent app port (default: a free one)")
    parser.add_argument("--model", default="local", help="local | bedrock:<id> | openai:<url>[#model]")
    parser.add_argument(
        "--speech-endpoint",
        default=None,
        help="use this running model server (ws://host:port, ...) instead of starting one",
    )
    parser.add_argument("--engine", default="onnx", help="engine of the started model server (onnx|torch)")
    parser.add_argument("--threads", type=int, default=None, help="inference threads of the model server")
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        help="another origin allowed to call the agent app (local origins always are); repeatable",
    )
    parser.add_argument(
        "--log-dir", type=Path, default=Path("artifacts/serve"), help="where the model server log goes"
    )
    return parser


@contextlib.asynccontextmanager
async def _speech_endpoint(args: argparse.Namespace) -> AsyncIterator[str]:
    """The given speech endpoint, or a model server started here for as long as the page is served."""
    if args.speech_endpoint:
        yield args.speech_endpoint
        return
    from agentcore_app.local_stack import model_server, provision_weights

    print("starting the model server (weights are fetched on first use)...", file=sys.stderr)
    await asyncio.to_thread(provision_weights)
    log = args.log_dir / "model_server.log"
    async with model_server(log, engine=args.engine, threads=args.threads) as server_url:
        yield server_url.replace("http://", "ws://", 1)


async def serve(args: argparse.Namespace) -> None:
    """Serve until interrupted (Ctrl-C): uvicorn handles the signal, then the model server is stopped."""
    from agentcore_app.app import create_app
    from agentcore_app.local_stack import free_port, warm_up_model

    async with _speech_endpoint(args) as speech_endpoint:
        await warm_up_model(args.model)
        app = with_page(
            create_app(speech_endpoint=speech_endpoint, model=args.model), cors_origins=args.cors_origin
        )
        port = args.port or free_port()
        server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=port, log_level="warning"))
        async with asyncio.TaskGroup() as group:
            serving = group.create_task(server.serve())
            while not server.started:
                if serving.done():
                    return  # uvicorn could not start (it logged why); the task group re-raises its error
                await asyncio.sleep(0.05)
            host = f"[{args.host}]" if ":" in args.host else args.host
            print(f"speech {speech_endpoint}, model {args.model}", file=sys.stderr)
            print(f"voice player: {page_url(f'http://{host}:{port}')}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry of ``agent-infra serve``; returns the exit status."""
    args = build_parser().parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))
    return 0
