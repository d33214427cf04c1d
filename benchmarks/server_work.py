"""The model server's work between two ``/stats`` snapshots, for the hang-up benchmarks.

Why one place: ``soak_hangups`` and ``hangup_cost`` both ask the same questions of the server (how many
engine calls and requests, how much audio made and how much of it reached anyone, is it idle yet), and
``/stats`` is the only witness that sits inside the server.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

SETTLE_S = 300.0  # the longest a benchmark waits for the server to go idle


async def server_stats(http: httpx.AsyncClient, http_url: str) -> dict[str, Any]:
    return dict((await http.get(http_url + "/stats")).json())


def idle(current: dict[str, Any]) -> bool:
    """No session open, no engine call running or queued."""
    work = current["inference_running"] + current["inference_queued"]
    return current["sessions_active"] == 0 and work == 0


async def until_idle(http: httpx.AsyncClient, http_url: str, poll_s: float = 0.05) -> dict[str, Any]:
    """The first idle snapshot (a hang-up settles after the engine call it left running)."""
    async with asyncio.timeout(SETTLE_S):
        while True:
            current = await server_stats(http, http_url)
            if idle(current):
                return current
            await asyncio.sleep(poll_s)


@dataclass(frozen=True, slots=True)
class ServerWork:
    """What the server did between two snapshots."""

    engine_calls: int
    requests_completed: int
    requests_cancelled: int
    audio_made_ms: float
    audio_sent_ms: float

    @property
    def audio_for_nobody_ms(self) -> float:
        """Speech the engine made that no client received (cancelled, or its client left)."""
        return round(self.audio_made_ms - self.audio_sent_ms, 1)

    @classmethod
    def between(cls, before: dict[str, Any], after: dict[str, Any]) -> ServerWork:
        return cls(
            engine_calls=after["inference_completed"] - before["inference_completed"],
            requests_completed=after["requests_completed"] - before["requests_completed"],
            requests_cancelled=after["requests_cancelled"] - before["requests_cancelled"],
            audio_made_ms=round(after["audio_made_ms"] - before["audio_made_ms"], 1),
            audio_sent_ms=round(after["audio_sent_ms"] - before["audio_sent_ms"], 1),
        )
