"""Reading what a model server sent, in order, for assertions about order and outcome (never timing).

A transcript keeps every frame as it came: control frames as their JSON objects, audio as
``{"type": "audio", "request_id": <the request whose synthesis_start came last>, "pcm": bytes}``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection

from strands_kokoro.protocol import control_object

Frame = dict[str, Any]
END_TYPES = frozenset({"synthesis_complete", "error", "cancelled"})


@dataclass
class Transcript:
    frames: list[Frame] = field(default_factory=list)

    def kinds(self) -> list[tuple[str, str | None]]:
        """``(type, request_id)`` of every frame, audio frames included."""
        return [(f["type"], f.get("request_id")) for f in self.frames]

    def index(self, kind: str, request_id: str | None) -> int:
        return self.kinds().index((kind, request_id))

    def end_of(self, request_id: str) -> Frame:
        """The one frame that ended ``request_id`` (asserts there is exactly one)."""
        ends = [f for f in self.frames if f["type"] in END_TYPES and f.get("request_id") == request_id]
        assert len(ends) == 1, f"{request_id}: {ends}"
        return ends[0]

    def pcm_of(self, request_id: str) -> bytes:
        return b"".join(
            f["pcm"] for f in self.frames if f["type"] == "audio" and f["request_id"] == request_id
        )

    def errors(self) -> list[Frame]:
        return [f for f in self.frames if f["type"] == "error"]


async def read_transcript(ws: ClientConnection, ends: int, timeout_s: float = 120.0) -> Transcript:
    """Read until ``ends`` frames that end something (complete, error, cancelled) have arrived."""
    transcript = Transcript()
    current: str | None = None
    async with asyncio.timeout(timeout_s):
        while ends > 0:
            payload = await ws.recv()
            control = control_object(payload)
            if control is None:
                assert isinstance(payload, bytes), f"a text frame that is not a JSON object: {payload[:80]!r}"
                transcript.frames.append({"type": "audio", "request_id": current, "pcm": payload})
                continue
            transcript.frames.append(control)
            if control["type"] == "synthesis_start":
                current = control["request_id"]
            elif control["type"] in END_TYPES:
                ends -= 1
    return transcript
