"""SSE reassembly in Chromium: a stream cut at awkward byte offsets decodes to the same audio and text.

The agent app's SSE arrives in delivery chunks that end anywhere (the seed saw 4 audio frames arrive as
6 chunks, 2 ending mid-frame). ``SplittingSseServer`` is a test double of the agent app that sends a
fixed event stream either whole or cut inside the base64, between the two ``\\n`` of a separator, inside
``data:`` and inside a multi-byte character, pausing between pieces so the browser reads them apart.

The double has no ``/ws``, so the page also shows its fallback: its WebSocket handshake is refused
(Chromium logs that as a console error, expected here) and it asks over SSE instead.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import math
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from agentcore_app.local.player import with_page
from agentcore_app.local.stack import serve_asgi
from tests.browser.browser_harness import browser_page, speak

pytestmark = pytest.mark.browser

SAMPLE_RATE = 24_000
TEXT = "Naïve otters ☕ sleep holding hands."
PIECE_PAUSE_S = 0.08


def sse(event: dict[str, Any]) -> bytes:
    """One event as the AgentCore SDK writes it (raw UTF-8, not \\u escapes)."""
    return b"data: " + json.dumps(event, ensure_ascii=False).encode("utf-8") + b"\n\n"


def tone_pcm(seconds: float, seed: int) -> bytes:
    """A tone with noise: every base64 character class shows up, and it is audibly not silence."""
    rng = random.Random(seed)
    n = int(seconds * SAMPLE_RATE)
    samples = (
        int(8000 * math.sin(2 * math.pi * 220 * i / SAMPLE_RATE) + rng.randint(-3000, 3000)) for i in range(n)
    )
    return b"".join(s.to_bytes(2, "little", signed=True) for s in samples)


@dataclass
class ScriptedStream:
    """The byte stream of one turn, and where each event of interest lies in it."""

    body: bytes
    pcm: bytes
    event_spans: list[tuple[int, int]] = field(default_factory=list)  # [start, end) incl. "\n\n"


def scripted_stream() -> ScriptedStream:
    chunks = [tone_pcm(0.25, seed) for seed in range(3)]
    events: list[dict[str, Any]] = [{"type": "agent_start", "request_id": "split", "mode": "bidi"}]
    events.append({"type": "text_delta", "seq": 1, "text": TEXT})
    for seq, pcm in enumerate(chunks, start=2):
        events.append(
            {
                "type": "audio_chunk",
                "seq": seq,
                "sentence": 0,
                "audio": base64.b64encode(pcm).decode("ascii"),
                "format": "pcm_s16le",
                "sample_rate": SAMPLE_RATE,
                "channels": 1,
            }
        )
    audio_ms = sum(len(c) for c in chunks) / 2 / SAMPLE_RATE * 1000
    events.append(
        {"type": "agent_end", "request_id": "split", "mode": "bidi", "audio_ms": audio_ms, "chunks": 3}
    )
    stream = ScriptedStream(body=b"", pcm=b"".join(chunks))
    for event in events:
        encoded = sse(event)
        stream.event_spans.append((len(stream.body), len(stream.body) + len(encoded)))
        stream.body += encoded
    return stream


def awkward_cuts(stream: ScriptedStream) -> dict[str, list[int]]:
    """Byte offsets, by kind, that end a delivery chunk where a naive reader would break.

    Several offsets per kind: under load the browser may read two pieces at once, and one hit per kind
    is what the test needs to have exercised it.
    """
    body = stream.body
    cuts: dict[str, list[int]] = {
        "inside the data: prefix": [],
        "inside a multi-byte character": [],
        "inside the base64": [],
        "between the two newlines": [],
    }
    for start, end in stream.event_spans[1:]:
        cuts["inside the data: prefix"].append(start + 3)
        cuts["between the two newlines"].append(end - 1)
        if b'"audio": "' in body[start:end]:
            b64_start = body.index(b'"audio": "', start) + len(b'"audio": "')
            b64_end = body.index(b'"', b64_start)
            cuts["inside the base64"] += [b64_start + 7, (b64_start + b64_end) // 2 + 1, b64_end - 5]
    text_start, text_end = stream.event_spans[1]
    for char in ("ï", "☕"):
        cuts["inside a multi-byte character"].append(body.index(char.encode(), text_start, text_end) + 1)
    return cuts


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *sorted(set(cuts)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges) if b > a]


def splitting_server(stream: ScriptedStream, cuts: list[int]) -> Starlette:
    """A test double of the agent app: POST /invocations streams ``stream`` whole or cut at ``cuts``.

    The prompt picks the delivery: ``whole`` sends one piece, anything else the cut pieces.
    """

    async def invocations(request: Request) -> StreamingResponse:
        payload = await request.json()
        pieces = [stream.body] if payload["prompt"] == "whole" else split_at(stream.body, cuts)

        async def deliver() -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece
                await asyncio.sleep(PIECE_PAUSE_S)  # so the browser reads each piece on its own

        return StreamingResponse(deliver(), media_type="text/event-stream")

    return with_page(Starlette(routes=[Route("/invocations", invocations, methods=["POST"])]))


async def _whole_then_split(chromium: Path, profile: Path, cuts: list[int]) -> list[dict[str, Any]]:
    stream = scripted_stream()
    refused = r"WebSocket connection to 'ws://127\.0\.0\.1:\d+/ws\?.*' failed"
    async with (
        serve_asgi(splitting_server(stream, cuts)) as url,
        browser_page(chromium, profile, expected_errors=(refused,)) as page,
    ):
        await page.goto(url + "/player/")
        for number, prompt in enumerate(("whole", "split"), start=1):
            await speak(page, prompt, "bidi")
            await page.wait_for_function(
                "n => ['done', 'error'].includes(window.__player.turns()[n - 1]?.state)",
                arg=number,
                timeout=30_000,
            )
        turns: list[dict[str, Any]] = await page.evaluate("window.__player.turns()")
        return turns


def test_split_stream_decodes_to_the_same_audio_and_text(chromium: Path, tmp_path: Path) -> None:
    stream = scripted_stream()
    cuts_by_kind = awkward_cuts(stream)
    # Around the second audio event's separator, every byte is sent on its own.
    _, audio2_end = stream.event_spans[3]
    cuts = [at for kind in cuts_by_kind.values() for at in kind] + list(range(audio2_end - 6, audio2_end + 6))
    whole, split = asyncio.run(_whole_then_split(chromium, tmp_path / "profile", cuts))

    # The browser really read the stream in awkward pieces: each kind of cut ended at least one read.
    read_ends = {sum(split["reads"][: i + 1]) for i in range(len(split["reads"]))}
    missed = [kind for kind, offsets in cuts_by_kind.items() if not read_ends.intersection(offsets)]
    assert not missed, f"no read ended {missed}; reads: {split['reads']}"
    assert whole["reads"] != split["reads"]

    expected_sha256 = hashlib.sha256(stream.pcm).hexdigest()
    for turn in (whole, split):
        assert turn["state"] == "done" and turn["errors"] == []
        assert turn["transport"] == "sse"  # the app offers no socket: the fallback
        assert turn["text"] == TEXT
        assert turn["chunks"] == 3
        assert turn["pcmSha256"] == expected_sha256
        assert sum(s["duration"] for s in turn["scheduled"]) * 1000 == pytest.approx(turn["end"]["audio_ms"])
    assert [s["duration"] for s in whole["scheduled"]] == [s["duration"] for s in split["scheduled"]]
