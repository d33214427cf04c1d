"""A piece of the local stack that does not come up is one line that quotes its log, and exit status 2.

:func:`agentcore_app.local.stack.wait_until_ready` raises :class:`~agentcore_app.local.stack.LaunchError`
with the last line of the child's log that says something; :func:`agentcore_app.local.commands.reported`
turns it (and the app's setting errors, also from inside the stack's task group) into one line on stderr.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from agentcore_app.local.commands import reported, serve_main
from agentcore_app.local.stack import LaunchError, last_log_line, start_model_server, wait_until_ready

pytestmark = pytest.mark.slow

TRACEBACK_LOG = """\
2026-01-01 12:00:00 INFO uvicorn.error: Uvicorn running on http://127.0.0.1:8080
2026-01-01 12:00:01 ERROR tts_container.app: loading the engine failed; /ping stays 503
Traceback (most recent call last):
  File "/x/tts_container/app.py", line 169, in _load_and_warm
    engine = await state.pool.run(load_engine)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
FileNotFoundError: [Errno 2] No such file or directory: 'kokoro-v1.0.int8.onnx'

"""


def test_the_last_meaningful_log_line_is_the_exception_after_a_traceback(tmp_path: Path) -> None:
    log = tmp_path / "model_server.log"
    log.write_text(TRACEBACK_LOG)
    assert (
        last_log_line(log)
        == "FileNotFoundError: [Errno 2] No such file or directory: 'kokoro-v1.0.int8.onnx'"
    )
    assert last_log_line(tmp_path / "absent.log") is None


def test_a_model_server_that_exits_before_ping_is_one_line_with_its_own_words(tmp_path: Path) -> None:
    """The real ``python -m tts_container`` refusing its arguments (as ``serve --engine bogus`` once did)."""
    log = tmp_path / "model_server.log"
    with pytest.raises(LaunchError) as refused:
        start_model_server("--engine", "bogus", log_path=log, ready_timeout_s=120)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("model server exited with 2 before /ping answered: ")
    assert "argument --engine: invalid choice: 'bogus'" in message and message.endswith(f"; see {log}")


class _PingStandIn(BaseHTTPRequestHandler):
    """A stand-in of a child's /ping: answer number ``n`` (from 0) is ``answer(n)``, a status and JSON."""

    answer: ClassVar[Callable[[int], tuple[int, dict[str, object]]]]
    answered: ClassVar[list[str]]

    def do_GET(self) -> None:
        status, obj = type(self).answer(len(self.answered))
        self.answered.append(str(obj["status"]))
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def ping_stand_in(answer: Callable[[int], tuple[int, dict[str, object]]]) -> Iterator[tuple[str, list[str]]]:
    """Its URL, and the statuses it answered so far."""
    answered: list[str] = []
    handler = type("Ping", (_PingStandIn,), {"answer": staticmethod(answer), "answered": answered})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answered
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def failed_ping() -> Iterator[str]:
    """What a model server that could not load its engine answers on /ping, forever."""
    with ping_stand_in(lambda n: (503, {"status": "failed"})) as (url, _):
        yield url


def test_a_model_server_that_failed_to_load_fails_at_once_not_after_the_timeout(
    failed_ping: str, tmp_path: Path
) -> None:
    log = tmp_path / "model_server.log"
    log.write_text(TRACEBACK_LOG)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with pytest.raises(LaunchError, match="could not load its engine: FileNotFoundError: ") as refused:
            wait_until_ready(alive, failed_ping, 600, log_path=log)
    finally:
        alive.kill()
        alive.wait()
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "in-a-task-group"])
def test_a_launch_error_is_one_line_and_exit_status_2(
    wrapped: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    failure = LaunchError("model server exited with 2 before /ping answered: boom; see x.log")

    def run() -> int:
        raise ExceptionGroup("unhandled errors in a TaskGroup", [failure]) if wrapped else failure

    assert reported("agent-infra serve", run) == 2
    assert capsys.readouterr().err == f"agent-infra serve: {failure}\n"


def test_other_failures_keep_their_traceback() -> None:
    def run() -> int:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        reported("agent-infra serve", run)


def test_an_agent_app_still_warming_its_model_is_waited_for() -> None:
    """The agent app's /ping (the SDK's shape) says ``HealthyBusy`` while it warms its model."""

    def warming(n: int) -> tuple[int, dict[str, object]]:
        return 200, {"status": "HealthyBusy" if n < 3 else "Healthy", "time_of_last_update": 0}

    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with ping_stand_in(warming) as (url, answered):
            wait_until_ready(alive, url, 60, name="agent app")
    finally:
        alive.kill()
        alive.wait()
    assert answered == ["HealthyBusy"] * 3 + ["Healthy"]


def test_serve_on_a_taken_port_is_one_line_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        # Nothing is started: no weights, no model server, no LLM (each would take seconds to minutes).
        assert serve_main(["--port", str(port), "--speech-endpoint", "ws://127.0.0.1:9"]) == 2
    said = capsys.readouterr().err
    assert said == f"agent-infra serve: cannot serve on 127.0.0.1:{port}: Address already in use\n"
