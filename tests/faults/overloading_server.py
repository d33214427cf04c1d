"""A stand-in model server that answers ``overloaded`` to the requests a test chooses.

Why a stand-in: the real server refuses only when its queue is full, which a well-behaved client never
lets happen; to see what the client does with a refusal the test must pick which requests get one.
Everything else is the real protocol (parsed and built by :mod:`strands_kokoro.protocol`), answered one
request at a time in arrival order, and the audio is :func:`~tests.faults.id_engine.expected_pcm` of the
request's text, so the listener's PCM tells which text it was made from.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import websockets

from strands_kokoro.protocol import (
    Cancel,
    Cancelled,
    Close,
    ErrorCode,
    ProtocolError,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
    audio_ms,
    parse_client_message,
)
from tests.faults.id_engine import expected_pcm

Refuse = Callable[[str, int], bool]  # (request_id, attempt starting at 1) -> answer overloaded?


@dataclass
class OverloadingServer:
    url: str
    attempts: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    arrivals: list[tuple[str, float]] = field(default_factory=list)  # (request_id, time.monotonic())


@asynccontextmanager
async def overloading_server(
    refuse: Refuse, *, retry_after_ms: int | None = None
) -> AsyncIterator[OverloadingServer]:
    """Serve on a free local port; yield the server (its ``url`` is a ``ws://`` endpoint). A refusal
    carries ``retry_after_ms`` when given, as a full model server's does."""
    state = OverloadingServer(url="")

    async def handler(websocket: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):  # a client that hangs up is not a failure
            await serve(websocket)

    async def serve(websocket: Any) -> None:
        async for payload in websocket:
            try:
                message = parse_client_message(payload)
            except ProtocolError as exc:
                await websocket.send(exc.frame().to_wire())
                continue
            if isinstance(message, Close):
                return
            if isinstance(message, Cancel):
                await websocket.send(Cancelled(0).to_wire())
                continue
            request_id = message.request_id or "anonymous"
            state.attempts[request_id] += 1
            state.arrivals.append((request_id, time.monotonic()))
            if refuse(request_id, state.attempts[request_id]):
                state.refused[request_id] += 1
                frame = ServerError(
                    request_id, ErrorCode.OVERLOADED, "queue full; retry later", retry_after_ms
                )
                await websocket.send(frame.to_wire())
                continue
            pcm = expected_pcm(message.text)
            await websocket.send(SynthesisStarted(request_id).to_wire())
            half = len(pcm) // 4 * 2
            for frame_bytes in (pcm[:half], pcm[half:]):
                await websocket.send(frame_bytes)
            done = SynthesisCompleted(request_id, audio_ms(len(pcm), 24_000), 2, 1.0, 2.0)
            await websocket.send(done.to_wire())

    server = await websockets.serve(handler, "127.0.0.1", 0)
    state.url = f"ws://127.0.0.1:{next(iter(server.sockets)).getsockname()[1]}"
    try:
        yield state
    finally:
        server.close()
        await server.wait_closed()
