"""``agent-infra serve --local`` as a user runs it: a real process, real sockets, then Ctrl-C.

It must print the page's URL, serve the page and the AgentCore contract from one origin, allow CORS for
local origins only, and stop its model server when interrupted.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from agentcore_app.player import PAGE_PATH
from cdk.local_stack import free_port

if TYPE_CHECKING:
    from tests.model_server_process import RunningServer

STARTUP_TIMEOUT_S = 120.0
AGENT_INFRA = str(Path(sys.executable).parent / "agent-infra")


def read_url(process: subprocess.Popen[str]) -> str:
    """The ``voice player: <url>`` line ``serve`` prints once it is listening."""
    assert process.stdout is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"serve exited with {process.wait()} before printing the URL")
        if match := re.search(r"voice player: (\S+)", line):
            return match.group(1)
    raise AssertionError("serve printed no URL")


def test_serve_prints_the_url_and_serves_page_and_contract(
    model_server: RunningServer, tmp_path: Path
) -> None:
    port = free_port()
    cmd = [
        AGENT_INFRA,
        "serve",
        "--local",
        "--port",
        str(port),
        "--speech-endpoint",
        model_server.ws_url,
        "--model",
        "openai:http://127.0.0.1:9#unused",  # never called here: no turn runs, and nothing loads the LLM
    ]
    process = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        url = read_url(process)
        assert url == f"http://127.0.0.1:{port}{PAGE_PATH}"
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(url, timeout=10)
        assert page.status_code == 200 and '<script type="module" src="player.js">' in page.text
        script = httpx.get(url + "player.js", timeout=10)
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert httpx.get(base + "/", timeout=10).headers.get("location") == PAGE_PATH
        # The AgentCore contract is untouched: /ping answers, /invocations still gives coded SSE errors.
        assert httpx.get(base + "/ping", timeout=10).json()["status"] == "Healthy"
        refused = httpx.post(base + "/invocations", json={"mode": "bidi"}, timeout=10)
        assert refused.headers["content-type"].startswith("text/event-stream")
        assert '"missing_prompt"' in refused.text
        # CORS: a page on another local port may call the app; a remote origin may not.
        preflight = {
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        }
        local = httpx.options(
            base + "/invocations", headers={"origin": "http://localhost:5173", **preflight}, timeout=10
        )
        assert local.status_code == 200
        assert local.headers["access-control-allow-origin"] == "http://localhost:5173"
        remote = httpx.options(
            base + "/invocations", headers={"origin": "http://evil.example", **preflight}, timeout=10
        )
        assert remote.status_code == 400 and "access-control-allow-origin" not in remote.headers
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
