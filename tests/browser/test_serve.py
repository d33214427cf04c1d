"""``agent-infra serve --local`` as a user runs it: a real process, real sockets, then Ctrl-C.

It must provision the weights and start its own model server, print the page's URL, serve the page and
the AgentCore contract from one origin, allow CORS for local origins only, and stop its model server
when interrupted.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from agentcore_app.local.player import PAGE_PATH
from agentcore_app.local.stack import free_port

STARTUP_TIMEOUT_S = 300.0  # it loads a model server first: minutes on a busy 2-core machine
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


def children(pid: int) -> set[int]:
    """The direct child processes of ``pid`` (Linux: /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(child) for child in (task / "children").read_text().split()}
    return found


def is_running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_serve_starts_a_model_server_serves_page_and_contract_and_stops_it_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    cmd = [
        AGENT_INFRA,
        "serve",
        "--local",
        "--port",
        str(port),
        "--log-dir",
        str(tmp_path / "logs"),
        "--model",
        "openai:http://127.0.0.1:9#unused",  # never called here: no turn runs, and nothing loads the LLM
    ]
    stderr = (tmp_path / "stderr.txt").open("w+")
    process = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        url = read_url(process)
        # The model server it started (no --speech-endpoint): named on stderr, a child of serve, answering.
        speech = re.search(r"speech ws://127\.0\.0\.1:(\d+)", (tmp_path / "stderr.txt").read_text())
        assert speech is not None, (tmp_path / "stderr.txt").read_text()
        speech_url = f"http://127.0.0.1:{speech.group(1)}"
        assert httpx.get(speech_url + "/ping", timeout=10).status_code == 200
        model_servers = children(process.pid)
        assert model_servers, "serve started no child process"
        assert (tmp_path / "logs" / "model_server.log").exists()

        assert url == f"http://127.0.0.1:{port}{PAGE_PATH}"
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(url, timeout=10)
        assert page.status_code == 200 and '<script type="module" src="player.js">' in page.text
        script = httpx.get(url + "player.js", timeout=10)
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert httpx.get(base + "/", timeout=10).headers.get("location") == PAGE_PATH
        assert httpx.get(base + PAGE_PATH.rstrip("/"), timeout=10).headers.get("location") == PAGE_PATH
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
        code = process.wait(timeout=60)
        stderr.close()
    assert code == 0
    # Ctrl-C stopped the model server it had started: the process is gone and its port refuses.
    assert not any(is_running(pid) for pid in model_servers), model_servers
    with pytest.raises(httpx.ConnectError):
        httpx.get(speech_url + "/ping", timeout=5)
