"""Helpers for the server tests: an in-process uvicorn on a real socket, and a WS transcript reader.

The in-process server runs on the test's own event loop (no thread, no second loop); tests that need
the real model use the ``model_server`` subprocess fixture from tests/conftest.py instead.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from websockets.asyncio.client import ClientConnection

from strands_kokoro.protocol import control_frame
from tts_container.__main__ import WS_MAX_FRAME_BYTES


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


async def stats(address: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"http://{address}/stats")
        response.raise_for_status()
        return dict(response.json())


async def wait_for_stats(
    address: str, ok: Callable[[dict[str, Any]], bool], timeout_s: float = 30.0
) -> dict[str, Any]:
    """Poll /stats until ``ok`` holds (the server settles asynchronously after a disconnect)."""
    async with asyncio.timeout(timeout_s):
        while True:
            current = await stats(address)
            if ok(current):
                return current
            await asyncio.sleep(0.05)


@dataclass
class Response:
    """Everything the server sent for one request: start, audio frames, then complete or error."""

    start: dict[str, Any] | None = None
    audio: list[bytes] = field(default_factory=list)
    end: dict[str, Any] | None = None

    @property
    def pcm(self) -> bytes:
        return b"".join(self.audio)


async def read_frame(ws: ClientConnection, timeout_s: float = 120.0) -> dict[str, Any] | bytes:
    """The next frame: a control dict, or audio bytes (DESIGN §3 classification rule)."""
    payload = await asyncio.wait_for(ws.recv(), timeout_s)
    control = control_frame(payload)
    if control is not None:
        return control
    assert isinstance(payload, bytes), f"text frame that is not a JSON object: {payload!r}"
    return payload


async def read_response(
    ws: ClientConnection, timeout_s: float = 120.0, *, start: dict[str, Any] | None = None
) -> Response:
    """Read one request's frames, from ``synthesis_start`` (or an error) to its end.

    ``start``: the request's ``synthesis_start`` when the caller has read it already.
    """
    response = Response(start=start)
    while True:
        frame = await read_frame(ws, timeout_s)
        if isinstance(frame, bytes):
            assert response.start is not None, "audio before synthesis_start"
            response.audio.append(frame)
        elif frame["type"] == "synthesis_start":
            assert response.start is None, f"second synthesis_start: {frame}"
            response.start = frame
        elif frame["type"] in ("synthesis_complete", "error"):
            response.end = frame
            return response
        else:
            raise AssertionError(f"unexpected frame {frame}")


def dumps(**fields: Any) -> bytes:
    """A client message as a BINARY frame, the way SageMaker delivers it."""
    return json.dumps(fields).encode()
