"""The REAL Kokoro model server as a subprocess, for tests that need one over a real socket.

Kept out of ``conftest.py`` so tests can import it by a unique module name (several test folders have a
``conftest.py`` of their own, and ``from conftest import ...`` would pick whichever loaded first).
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass

import httpx

from agentcore_app.local_stack import free_port, model_server_command

__all__ = ["RunningServer", "free_port", "start_model_server", "stop_model_server"]


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
