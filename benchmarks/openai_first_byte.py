"""First audio byte per route and format for the same text: compressed streams against PCM.

Each trial opens a fresh connection and times from the send to the first audio byte read; each round asks
every way once, in an order rotated round by round. Ways: ``openai`` (``POST /v1/audio/speech`` in each
``--formats``), ``invocations`` and ``websocket``. Prints medians, each way's ratio to its route's PCM and
the first round apart; writes ``benchmarks/results/openai_first_byte.json`` with the load::

    uv run --all-extras python -m benchmarks.openai_first_byte                  # starts an onnx server
    uv run --all-extras python -m benchmarks.openai_first_byte --routes openai,invocations,websocket
    uv run --all-extras python -m benchmarks.openai_first_byte --url http://127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.local.stack import start_model_server, stop_model_server
from benchmarks.machine import MachineAt, results_path, save_results
from benchmarks.tts_latency import TEXT, synthesize_once
from strands_kokoro.protocol import (
    DEFAULT_VOICE,
    AudioFormatName,
)

RESULTS = Path(__file__).parent / "results" / "openai_first_byte.json"
SPEECH_PATH = "/v1/audio/speech"
INVOCATIONS_PATH = "/invocations"
ROUTES = ("openai", "invocations", "websocket")
# The formats each route offers that this benchmark asks for (``--formats`` picks among them).
ROUTE_FORMATS = {
    "openai": ("pcm", "wav", "opus", "mp3", "aac", "flac"),
    "invocations": ("pcm", "wav", "opus", "mp3"),
    "websocket": ("pcm", "opus", "mp3"),
}

Way = tuple[str, str]  # (route, format)


async def post_first_byte_ms(url: str, body: dict[str, Any]) -> float:
    """A fresh connection, one POST: ms from the send to the first body byte (the body is read to its end)."""
    async with httpx.AsyncClient(timeout=300) as client:
        started = time.perf_counter()
        first: float | None = None
        async with client.stream("POST", url, json=body) as response:
            response.raise_for_status()
            async for chunk in response.aiter_raw():
                if chunk and first is None:
                    first = time.perf_counter()
    assert first is not None, "the route sent no audio"
    return (first - started) * 1000


async def openai_first_byte_ms(http_url: str, text: str, fmt: str, voice: str = DEFAULT_VOICE) -> float:
    """``POST /v1/audio/speech`` in ``fmt``: ms to its first body byte."""
    body = {"model": "kokoro", "input": text, "voice": voice, "response_format": fmt}
    return await post_first_byte_ms(f"{http_url}{SPEECH_PATH}", body)


async def invocations_first_byte_ms(http_url: str, text: str, fmt: str, voice: str = DEFAULT_VOICE) -> float:
    """``POST /invocations`` in ``fmt``: ms to its first body byte."""
    body = {"text": text, "voice": voice, "format": fmt}
    return await post_first_byte_ms(f"{http_url}{INVOCATIONS_PATH}", body)


async def websocket_first_byte_ms(http_url: str, text: str, fmt: str, voice: str = DEFAULT_VOICE) -> float:
    """A fresh WebSocket session, one ``synthesize`` in ``fmt``: ms to its first binary frame (read to
    ``synthesis_complete``)."""
    audio_format: AudioFormatName = fmt  # type: ignore[assignment]
    ws_url = http_url.replace("http://", "ws://", 1)
    return (await synthesize_once(ws_url, text, voice, audio_format)).first_audio_ms


ASK: dict[str, Callable[[str, str, str], Awaitable[float]]] = {
    "openai": openai_first_byte_ms,
    "invocations": invocations_first_byte_ms,
    "websocket": websocket_first_byte_ms,
}


def ways(routes: list[str], formats: list[str]) -> list[Way]:
    """Every (route, format) asked: each route's PCM first (the reference), then the formats it offers."""
    chosen = ["pcm", *(fmt for fmt in formats if fmt != "pcm")]
    return [(route, fmt) for route in routes for fmt in chosen if fmt in ROUTE_FORMATS[route]]


async def measure(http_url: str, text: str, asked: list[Way], trials: int) -> dict[Way, list[float]]:
    """``trials`` rounds, each asking every way once, the order rotated by one way per round."""
    times: dict[Way, list[float]] = {way: [] for way in asked}
    for round_index in range(trials):
        shift = round_index % len(asked)
        for route, fmt in asked[shift:] + asked[:shift]:
            times[(route, fmt)].append(await ASK[route](http_url, text, fmt))
    return times


def table(times: dict[Way, list[float]]) -> list[dict[str, Any]]:
    """A row per way: median, min, the first round's figure, and the median's ratio to its route's PCM
    (also the median of the per-round ratios: each round's pair shared the same moment's load)."""
    rows = []
    for (route, fmt), values in times.items():
        pcm = times[(route, "pcm")]
        per_round = [value / reference for value, reference in zip(values, pcm, strict=True)]
        rows.append(
            {
                "route": route,
                "format": fmt,
                "median_ms": round(statistics.median(values), 1),
                "min_ms": round(min(values), 1),
                "first_round_ms": round(values[0], 1),
                "vs_pcm": round(statistics.median(values) / statistics.median(pcm), 2),
                "vs_pcm_per_round": round(statistics.median(per_round), 2),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running model server (http://host:port); default: start one")
    parser.add_argument("--text", default=TEXT)
    parser.add_argument("--routes", default="openai", help=f"comma-separated, of {', '.join(ROUTES)}")
    parser.add_argument("--formats", default="pcm,wav,opus,mp3", help="comma-separated (pcm is always asked)")
    parser.add_argument("--trials", type=int, default=5, help="rounds")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    asked = ways(args.routes.split(","), args.formats.split(","))
    output = args.output or results_path(RESULTS)
    started = MachineAt.now()
    server = None if args.url else start_model_server()
    try:
        http_url = args.url or server.http_url  # type: ignore[union-attr]
        times = asyncio.run(measure(http_url, args.text, asked, args.trials))
    finally:
        if server is not None:
            stop_model_server(server)
    rows = table(times)
    output.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "text_chars": len(args.text),
        "trials": args.trials,
        "rows": rows,
        "times_ms": {f"{route} {fmt}": values for (route, fmt), values in times.items()},
    }
    save_results(output, result, started)
    print(f"first audio byte, {len(args.text)} characters, {args.trials} rounds (load before {started.load})")
    columns = f"{'median ms':>11}{'min ms':>9}{'1st round':>11}{'vs pcm':>9}{'per round':>11}"
    print(f"{'route':<13}{'format':<8}{columns}")
    for row in rows:
        print(
            f"{row['route']:<13}{row['format']:<8}{row['median_ms']:>11.1f}{row['min_ms']:>9.1f}"
            f"{row['first_round_ms']:>11.1f}{row['vs_pcm']:>8.2f}x{row['vs_pcm_per_round']:>10.2f}x"
        )
    print(f"neighbours' load during the run: {result['neighbours_load']} cores")


if __name__ == "__main__":
    main()
