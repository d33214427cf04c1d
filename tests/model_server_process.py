"""The model server on a real socket: the REAL one as a subprocess, or an app (with a fake engine) in-process.

Both come from the launcher module :mod:`agentcore_app.local.stack` (the same code
``agent-infra demo --local`` runs), so the tests start servers exactly as a user's machine does. Kept out
of ``conftest.py`` so tests can import it by name (``tests.model_server_process``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.types import ASGIApp

from agentcore_app.local.stack import (
    ModelServerProcess,
    free_port,
    serve_asgi,
    start_model_server,
    stop_model_server,
)
from tts_container.__main__ import SERVER_OPTIONS

__all__ = [
    "RunningServer",
    "free_port",
    "running_app",
    "start_model_server",
    "stop_model_server",
    "wait_for_ping",
]

RunningServer = ModelServerProcess
"""A model server subprocess: ``http_url`` for POST /invocations, ``ws_url`` for the bidi session."""


@asynccontextmanager
async def running_app(app: ASGIApp, *, wait_ready: bool = True) -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1 (a free port); yield ``host:port``; stop it on exit."""
    async with serve_asgi(app, **SERVER_OPTIONS) as url:
        address = url.removeprefix("http://")
        if wait_ready:
            await wait_for_ping(address)
        yield address


async def wait_for_ping(address: str, timeout_s: float = 30.0) -> None:
    """Until the in-process app's GET /ping answers 200 (it runs on this loop, so this must not block)."""
    async with httpx.AsyncClient() as client, asyncio.timeout(timeout_s):
        while True:
            if (await client.get(f"http://{address}/ping")).status_code == 200:
                return
            await asyncio.sleep(0.02)
