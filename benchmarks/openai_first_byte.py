"""First byte through OpenAI's speech API against first audio over our own WebSocket, for the same text.

Each trial starts from a fresh connection, routes alternating: ``POST /v1/audio/speech`` in ``--format``
(mp3 by default) and ``pcm``, and a ``synthesize`` on a fresh WebSocket session, timed from send to the
first audio byte read. Prints medians and writes ``benchmarks/results/openai_first_byte.json`` with the
load (architecture §7)::

    uv run --all-extras python -m benchmarks.openai_first_byte                  # starts an onnx server
    uv run --all-extras python -m benchmarks.openai_first_byte --url http://127.0.0.1:8080
    uv run --all-extras python -m benchmarks.openai_first_byte --text "Hi." --trials 1   # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.local.stack import start_model_server, stop_model_server
from benchmarks.machine import load_average, results_path
from benchmarks.tts_latency import TEXT, synthesize_once
from strands_kokoro.protocol import DEFAULT_VOICE

RESULTS = Path(__file__).parent / "results" / "openai_first_byte.json"
SPEECH_PATH = "/v1/audio/speech"


async def openai_first_byte_ms(http_url: str, text: str, fmt: str, voice: str = DEFAULT_VOICE) -> float:
    """A fresh connection, one ``POST /v1/audio/speech``: ms from the send to the first body byte (the
    rest is read to its end, so the next trial finds the engine idle)."""
    body = {"model": "kokoro", "input": text, "voice": voice, "response_format": fmt}
    async with httpx.AsyncClient(timeout=300) as client:
        started = time.perf_counter()
        first: float | None = None
        async with client.stream("POST", f"{http_url}{SPEECH_PATH}", json=body) as response:
            response.raise_for_status()
            async for chunk in response.aiter_bytes():
                if chunk and first is None:
                    first = time.perf_counter()
    assert first is not None, "the route sent no audio"
    return (first - started) * 1000


async def measure(http_url: str, text: str, fmt: str, trials: int) -> dict[str, list[float]]:
    ws_url = http_url.replace("http://", "ws://", 1)
    times: dict[str, list[float]] = {"websocket": [], f"openai {fmt}": [], "openai pcm": []}
    for _ in range(trials):
        times["websocket"].append((await synthesize_once(ws_url, text)).first_audio_ms)
        times[f"openai {fmt}"].append(await openai_first_byte_ms(http_url, text, fmt))
        if fmt != "pcm":
            times["openai pcm"].append(await openai_first_byte_ms(http_url, text, "pcm"))
    return {route: values for route, values in times.items() if values}


def table(times: dict[str, list[float]]) -> list[dict[str, Any]]:
    reference = statistics.median(times["websocket"])
    return [
        {
            "route": route,
            "median_ms": round(statistics.median(values), 1),
            "min_ms": round(min(values), 1),
            "vs_websocket": round(statistics.median(values) / reference, 2),
        }
        for route, values in times.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running model server (http://host:port); default: start one")
    parser.add_argument("--text", default=TEXT)
    parser.add_argument("--format", default="mp3", choices=["mp3", "opus", "aac", "flac", "wav", "pcm"])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    load_before = load_average()
    server = None if args.url else start_model_server()
    try:
        http_url = args.url or server.http_url  # type: ignore[union-attr]
        times = asyncio.run(measure(http_url, args.text, args.format, args.trials))
    finally:
        if server is not None:
            stop_model_server(server)
    rows = table(times)
    print(f"first audio byte, {len(args.text)} characters, {args.trials} trials (medians)")
    print(f"{'route':<14}{'median ms':>12}{'min ms':>10}{'vs WebSocket':>15}")
    for row in rows:
        print(
            f"{row['route']:<14}{row['median_ms']:>12.1f}{row['min_ms']:>10.1f}{row['vs_websocket']:>14.2f}x"
        )
    output = args.output or results_path(RESULTS)
    output.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "text_chars": len(args.text),
        "trials": args.trials,
        "rows": rows,
        "times_ms": times,
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": load_average(),
        "getloadavg": list(os.getloadavg()),
    }
    output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
