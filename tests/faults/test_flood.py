"""A client that floods bad messages and never reads the errors: the server's memory stays bounded.

Errors never echo the client's request id, at most ``MAX_UNREAD_ERRORS`` wait to be sent (then the
server stops reading: the flooder's own TCP window throttles it), a send stuck on the client closes the
session with 1008 ``error_flood``, and permessage-deflate is off (with it, tiny frames would inflate to
60 KB messages, read or not). Measured on the REAL model server process (``/proc/<pid>/status``), while a
second, well-behaved session keeps asking for audio and getting it.

The flood mixes 60,000-character request ids with small messages whose errors are as large
as an error gets (the fastest way to fill the server's send buffer, which a client that does not read
must do before the server can tell it is not reading).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from strands_kokoro.protocol import WS_PATH
from tests.faults.id_engine import IdEngine, expected_pcm
from tests.faults.wire import read_transcript
from tests.model_server_process import RunningServer, running_app
from tests.tts_container.server_harness import dumps, open_ws, stats, wait_for_stats
from tts_container.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FLOOD_S = 10.0
MAX_GROWTH_BYTES = 50 * 1024 * 1024
# A synthesize with a 60,000-character request id: the largest error an echoing server would send.
BIG = dumps(type="synthesize", text="hi", request_id="x" * 60_000)
SMALL = dumps(type="t" * 80, request_id="r" * 100)  # unknown_type: ~300 bytes of error for 200 sent
FLOOD = [SMALL] * 9 + [BIG]


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def small_receive_buffer_socket(port: int) -> socket.socket:
    """A client socket with a tiny receive window: a client that does not read stops the server's
    writes after a few KB instead of after the kernel's megabytes of autotuned buffer."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


async def flood(ws: ClientConnection, until: float, messages: list[bytes] = FLOOD) -> int:
    """Send bad messages until ``until``; returns how many went out. The server throttles a client that
    does not read (it stops reading too), so a send may block until the deadline: that is the point."""
    sent = 0
    with contextlib.suppress(ConnectionClosed, OSError, TimeoutError):
        while (left := until - time.monotonic()) > 0:
            await asyncio.wait_for(ws.send(messages[sent % len(messages)]), left)
            sent += 1
            await asyncio.sleep(0)  # a send that never blocks would starve the other session's task
    return sent


async def flood_until_throttled(ws: ClientConnection, blocked_s: float = 1.0, limit_s: float = 60.0) -> int:
    """Go on flooding until one send stays blocked for ``blocked_s``: the server has stopped reading.

    How long that takes depends on how fast this machine fills the kernel's buffers; the outcome does
    not. Returns how many more went out; fails the test if the server never pushed back.
    """
    sent = 0
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            await asyncio.wait_for(ws.send(FLOOD[sent % len(FLOOD)]), blocked_s)
        except TimeoutError:
            return sent
        sent += 1
        await asyncio.sleep(0)
    raise AssertionError(f"the server kept reading a client that reads nothing ({sent} more messages)")


async def error_floods(address: str) -> int:
    return int((await stats(address))["error_floods"])


class RssPeak:
    """The peak RSS of a process, sampled every 0.1 s while the block runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before = self.peak = rss_bytes(pid)
        self._task: asyncio.Task[None] | None = None

    async def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, rss_bytes(self.pid))
            await asyncio.sleep(0.1)

    async def __aenter__(self) -> RssPeak:
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()
        self.peak = max(self.peak, rss_bytes(self.pid))

    @property
    def growth(self) -> int:
        return self.peak - self.before


async def keep_speaking(url: str, until: float) -> int:
    """A well-behaved session during the flood: one short request after another, each must complete."""
    completed = 0
    async with open_ws(url) as ws:
        while time.monotonic() < until or completed == 0:
            await ws.send(dumps(text="Still here.", request_id=f"ok-{completed}"))
            transcript = await read_transcript(ws, ends=1)
            assert transcript.end_of(f"ok-{completed}")["type"] == "synthesis_complete"
            assert transcript.pcm_of(f"ok-{completed}")
            completed += 1
    return completed


async def test_a_non_reading_flood_is_closed_with_a_code_and_memory_stays_flat(
    model_server: RunningServer,
) -> None:
    url = model_server.ws_url + WS_PATH
    address = f"127.0.0.1:{model_server.port}"
    async with open_ws(url) as warm:  # the engine's buffers for this text exist before the baseline
        await warm.send(dumps(text="Still here.", request_id="warm"))
        await read_transcript(warm, ends=1)
    floods_before = await error_floods(address)
    sock = small_receive_buffer_socket(model_server.port)
    async with (
        RssPeak(model_server.process.pid) as rss,
        open_ws(url, sock=sock, max_queue=1, write_limit=2**16, close_timeout=1) as flooder,
    ):
        assert flooder.response is not None
        assert "Sec-WebSocket-Extensions" not in flooder.response.headers  # no permessage-deflate
        until = time.monotonic() + FLOOD_S
        speaker = asyncio.create_task(keep_speaking(url, until))
        sent = await flood(flooder, until)
        sent += await flood_until_throttled(flooder)  # the server stopped reading it: throttled
        spoken = await speaker
        # Still not reading: the server finds out that its sends are stuck, and gives up on the session.
        await wait_for_stats(address, lambda now: now["error_floods"] > floods_before, timeout_s=60)
        # Now read: the errors the server did send, then its close frame with the reason.
        received = 0
        with contextlib.suppress(ConnectionClosed):
            async with asyncio.timeout(60):
                async for _ in flooder:
                    received += 1
    assert flooder.close_code == 1008, (flooder.close_code, flooder.close_reason, sent, received)
    assert (flooder.close_reason or "").startswith("error_flood")
    assert sent > received  # it really did not read: the server stopped answering, and reading
    assert spoken >= 2  # the other session kept getting audio all along
    assert rss.growth < MAX_GROWTH_BYTES, f"RSS grew {rss.growth / 2**20:.1f} MiB ({sent} sent)"


async def test_inflating_frames_cannot_make_the_server_hold_memory(model_server: RunningServer) -> None:
    """Only 60,000-character request ids, as fast as a client can send them: with permessage-deflate each
    60 KB message would cross the wire as ~100 bytes, and uvicorn inflates and queues every frame of a
    256 KB read at once, so the server refuses deflate."""
    url = model_server.ws_url + WS_PATH
    async with (
        RssPeak(model_server.process.pid) as rss,
        open_ws(url, compression="deflate", max_queue=1, close_timeout=1) as flooder,
    ):
        assert flooder.response is not None and "Sec-WebSocket-Extensions" not in flooder.response.headers
        assert await flood(flooder, time.monotonic() + FLOOD_S / 2, [BIG]) > 100
    assert rss.growth < MAX_GROWTH_BYTES, f"RSS grew {rss.growth / 2**20:.1f} MiB"


async def test_a_reading_client_that_sends_a_burst_of_bad_messages_gets_every_error() -> None:
    """ "One that reads gets every error and goes on" (session.py): a burst of 300 bad frames arrives in
    one read, so the reader queues errors faster than the sender gets a turn; the client reads all along."""
    engine = IdEngine()
    n = 300
    async with running_app(create_app(lambda: engine)) as address, open_ws(f"ws://{address}{WS_PATH}") as ws:

        async def read_errors() -> list[dict[str, object]]:
            return [json.loads(await ws.recv()) for _ in range(n)]

        reader = asyncio.create_task(read_errors())
        for _ in range(n):
            await ws.send("{bad")
        errors = await reader
        await ws.send(dumps(text="Still here.", request_id="after"))
        transcript = await read_transcript(ws, ends=1)
    assert [e["code"] for e in errors] == ["bad_json"] * n
    assert transcript.pcm_of("after") == expected_pcm("Still here.")
