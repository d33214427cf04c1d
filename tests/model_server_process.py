"""The model server on a real socket: the REAL one as a subprocess, or an app (with a fake engine) in-process.

Kept out of ``conftest.py`` so tests can import it by a unique module name (several test folders have a
``conftest.py`` of their own, and ``from conftest import ...`` would pick whichever loaded first).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import uvicorn
from starlette.applications import Starlette

from agentcore_app.local_stack import free_port, model_server_command
from tts_container.__main__ import WS_MAX_FRAME_BYTES

__all__ = [
    "RunningServer",
    "free_port",
    "running_app",
    "start_model_server",
    "stop_model_server",
    "wait_for_ping",
]


@dataclass(frozen=True)
class RunningServer:
    """A model server subprocess: ``http_url`` for POST /invocations, ``ws_url`` for the bidi session."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"


def start_model_server(*extra_args: str, ready_timeout_s: float = 600.0) -> RunningServer:
    """Start ``python -m tts_container`` (onnx engine, real weights) and wait for GET /ping == 200."""
    port = free_port()
    cmd = model_server_command(port)
    process = subprocess.Popen([*cmd, *extra_args], env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"model server exited with {process.returncode} before /ping answered")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ping", timeout=1.0).status_code == 200:
                return RunningServer(process, port)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"model server did not answer /ping within {ready_timeout_s:.0f} s")


def stop_model_server(server: RunningServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@asynccontextmanager
async def running_app(app: Starlette, *, wait_ready: bool = True) -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1 (a free port); yield ``host:port``; stop it on exit."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", ws_max_size=WS_MAX_FRAME_BYTES
    )
    server = uvicorn.Server(config)
    async with asyncio.TaskGroup() as tasks:
        serving = tasks.create_task(server.serve())
        while not server.started:
            if serving.done():
                raise RuntimeError("uvicorn did not start")
            await asyncio.sleep(0.01)
        address = f"127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        if wait_ready:
            await wait_for_ping(address)
        try:
            yield address
        finally:
            server.should_exit = True


async def wait_for_ping(address: str, timeout_s: float = 30.0) -> None:
    async with httpx.AsyncClient() as client, asyncio.timeout(timeout_s):
        while True:
            if (await client.get(f"http://{address}/ping")).status_code == 200:
                return
            await asyncio.sleep(0.02)
