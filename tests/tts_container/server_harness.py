"""Helpers for the server tests: an in-process uvicorn on a real socket, and a WS transcript reader.

The in-process server (``running_app``, shared with other test folders through
``model_server_process``) runs on the test's own event loop; tests that need the real model use the
``model_server`` subprocess fixture from tests/conftest.py instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from strands_kokoro.protocol import control_object


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


def idle(current: dict[str, Any]) -> bool:
    """No session open and no engine work running or queued (``/stats``)."""
    work = current["inference_running"] + current["inference_queued"]
    return current["sessions_active"] == 0 and work == 0


def synthesizing(current: dict[str, Any]) -> bool:
    """A session is open and the engine is working on one of its sentences (``/stats``)."""
    return current["sessions_active"] >= 1 and current["inference_running"] >= 1


@dataclass
class Response:
    """Everything the server sent for one request: start, audio frames, then complete or error.

    ``timed``: each ``word_timings`` frame's words, with how many audio bytes had come before it.
    """

    start: dict[str, Any] | None = None
    audio: list[bytes] = field(default_factory=list)
    end: dict[str, Any] | None = None
    timed: list[tuple[int, list[dict[str, Any]]]] = field(default_factory=list)

    @property
    def pcm(self) -> bytes:
        return b"".join(self.audio)


async def read_frame(ws: ClientConnection, timeout_s: float = 120.0) -> dict[str, Any] | bytes:
    """The next frame: a control dict, or audio bytes (architecture §3 classification rule)."""
    payload = await asyncio.wait_for(ws.recv(), timeout_s)
    control = control_object(payload)
    if control is not None:
        return control
    assert isinstance(payload, bytes), f"text frame that is not a JSON object: {payload!r}"
    return payload


async def read_audio(ws: ClientConnection, timeout_s: float = 120.0) -> bytes:
    """The next audio frame, past the ``word_timings`` frames that go ahead of it."""
    frame = await read_frame(ws, timeout_s)
    while isinstance(frame, dict) and frame.get("type") == "word_timings":
        frame = await read_frame(ws, timeout_s)
    assert isinstance(frame, bytes), frame
    return frame


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
        elif frame["type"] == "session_start":
            # The server's first frame on a session, before any request's: it belongs to none.
            assert response.start is None and not response.audio, f"session_start mid-request: {frame}"
        elif frame["type"] == "synthesis_start":
            assert response.start is None, f"second synthesis_start: {frame}"
            response.start = frame
        elif frame["type"] == "word_timings":
            assert response.start is not None and frame["request_id"] == response.start["request_id"], frame
            response.timed.append((len(response.pcm), frame["words"]))
        elif frame["type"] in ("synthesis_complete", "error"):
            response.end = frame
            return response
        else:
            raise AssertionError(f"unexpected frame {frame}")


@contextlib.asynccontextmanager
async def open_ws(url: str, **options: Any) -> AsyncIterator[ClientConnection]:
    """A raw WebSocket to the model server, past its first frame (``session_start``, checked here)."""
    async with connect(url, **options) as ws:
        await read_session_start(ws)
        yield ws


async def read_session_start(ws: ClientConnection) -> dict[str, Any]:
    """A session's first frame, checked to be ``session_start`` (the server's warm-up measures in it)."""
    hello = control_object(await asyncio.wait_for(ws.recv(), 120.0))
    assert hello is not None and hello["type"] == "session_start", hello
    return hello


def dumps(**fields: Any) -> bytes:
    """A client message as a BINARY frame, the way SageMaker delivers it."""
    return json.dumps(fields).encode()
