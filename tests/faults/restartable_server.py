"""A REAL model server subprocess that a test can kill and start again on the same port.

Why the same port: a client that reconnects knows only its endpoint string; a restarted container (or a
crashed process brought back by its supervisor) answers at the same address.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass

from agentcore_app.local.stack import (
    MODEL_SERVER_READY_TIMEOUT_S,
    ModelServerProcess,
    free_port,
    model_server_command,
    stop_model_server,
    wait_until_ready,
)


@dataclass
class RestartableServer:
    port: int
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Launch ``python -m tts_container`` on this port and return at once (see :meth:`wait_ready`)."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(model_server_command(self.port), env=env)
        self.starts += 1

    def wait_ready(self) -> None:
        assert self.process is not None
        wait_until_ready(self.process, self.http_url, MODEL_SERVER_READY_TIMEOUT_S)

    def kill(self) -> None:
        """SIGKILL: no close frames, no goodbyes (a crash, an OOM kill, a pulled plug)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None:
            stop_model_server(ModelServerProcess(self.process, self.port))


def restartable_server() -> RestartableServer:
    """A started (ready) server on a free port."""
    server = RestartableServer(free_port())
    server.start()
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    return server
