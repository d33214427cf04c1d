"""Sessions that end, however they end, leave no traceback in the model server's log.

A listener's audit found one "Task exception was never retrieved ... ValueError: negative file
descriptor" per WebSocket session close: the close of a connection the peer had already closed set a
socket option on uvloop's view of a socket with no fd left (kokoro_serving.uvicorn_protocol).
Against a REAL model server of its own (its log is read), uvloop as ``python -m tts_container`` runs it.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from strands_kokoro.protocol import WS_PATH
from tests.model_server_process import start_model_server, stop_model_server
from tests.tts_container.server_harness import dumps, idle, read_response, wait_for_stats

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_every_way_a_session_ends_leaves_a_clean_log(tmp_path: Path) -> None:
    log = tmp_path / "model_server.log"
    server = start_model_server("--no-idle-calibration", log_path=log)
    address = server.http_url.removeprefix("http://")
    try:
        for ending in ("close", "drop", "reset", "close", "drop", "reset"):
            ws = await connect(server.ws_url + WS_PATH)
            await ws.send(dumps(text="Hello there, this is one sentence to speak.", request_id="r1"))
            if ending == "close":
                await read_response(ws)
                await ws.close()
            else:
                await ws.recv()  # synthesis_start: the request runs
                sock = ws.transport.get_extra_info("socket")
                if ending == "reset":
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                ws.transport.abort()
            await wait_for_stats(address, idle)
        await asyncio.sleep(0.5)
    finally:
        stop_model_server(server)
    said = log.read_text(encoding="utf-8", errors="replace")
    assert "connection open" in said  # the log is the server's
    assert "Traceback" not in said and "never retrieved" not in said, said[-3000:]
