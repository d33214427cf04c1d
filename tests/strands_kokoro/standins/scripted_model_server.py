"""A test double of the Kokoro model server that answers every ``synthesize`` with PCM frames it is given.

Why a double and not the real server: some tests need audio bytes chosen byte for byte (PCM that begins
with ``{``, PCM that happens to spell a JSON object) to show how the client classifies frames. Control
frames are real protocol text frames (:mod:`strands_kokoro.protocol`), audio is sent as binary frames,
exactly as the real server does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import websockets

from strands_kokoro.protocol import SynthesisCompleted, SynthesisStarted

SAMPLE_RATE = 24_000


@asynccontextmanager
async def scripted_model_server(pcm_frames: list[bytes]) -> AsyncIterator[str]:
    """Serve on a free local port; yield its ``ws://`` URL (the router appends the bidi path)."""

    async def handler(websocket: Any) -> None:
        async for message in websocket:
            request = json.loads(message)
            if request.get("type") == "close":
                return
            await websocket.send(SynthesisStarted(request["request_id"], SAMPLE_RATE).to_wire())
            for frame in pcm_frames:
                await websocket.send(frame)
            n_bytes = sum(len(f) for f in pcm_frames)
            await websocket.send(
                SynthesisCompleted(
                    request["request_id"],
                    audio_ms=n_bytes / 2 / SAMPLE_RATE * 1000,
                    chunks=len(pcm_frames),
                    first_audio_ms=1.0,
                    elapsed_ms=2.0,
                ).to_wire()
            )

    server = await websockets.serve(handler, "127.0.0.1", 0)
    port = next(iter(server.sockets)).getsockname()[1]
    try:
        yield f"ws://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
