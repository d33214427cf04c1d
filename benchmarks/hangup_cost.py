"""What a caller who hangs up costs the model server: requests, engine calls, audio and time after it.

    uv run --all-extras python -m benchmarks.hangup_cost [--trials 3]

The agent app runs in its own process (:mod:`tests.faults.agent_app_process`: a scripted 16-sentence
answer whose last token is held, so the turn still runs) against the real model server. A raw TCP client
posts a turn and leaves after the first ``audio_chunk`` or ``text_delta``, with a FIN or a reset; then
the server's ``/stats`` is polled every 20 ms: requests completed and engine calls after the hang-up,
audio made and never sent, time until the cancel shows and until idle. Goal: at most 1 request and 1 s.
The load is recorded; never a timed assert.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.local.stack import ModelServerProcess, start_model_server, stop_model_server
from benchmarks.machine import results_path
from benchmarks.server_work import ServerWork, idle, server_stats, until_idle
from tests.faults.agent_app_process import agent_app_process
from tests.faults.raw_http import RawConnection, post_head

RESULTS = Path(__file__).parent / "results" / "hangup_cost.json"
CASES = [(b'"audio_chunk"', "close"), (b'"audio_chunk"', "reset"), (b'"text_delta"', "close")]


@dataclass
class Trial:
    after: str
    how: str
    work: ServerWork | None = None  # from the hang-up until the server was idle
    cancel_seen_s: float | None = None
    idle_after_s: float | None = None


async def trial(server: ModelServerProcess, speech: str, after: bytes, how: str) -> Trial:
    result = Trial(after.decode().strip('"'), how)
    with (
        tempfile.TemporaryDirectory() as scratch,
        agent_app_process(speech, Path(scratch) / "m.jsonl") as url,
    ):
        address = url.removeprefix("http://")
        body = json.dumps({"prompt": "Tell me about otters.", "mode": "bidi"}).encode()
        async with httpx.AsyncClient(timeout=60) as http:
            await until_idle(http, server.http_url)  # nothing left over from the trial before
            async with RawConnection(address) as connection:
                await connection.send(post_head("/invocations", address, len(body)) + body)
                async with asyncio.timeout(300):
                    await connection.read_until(after)
                before = await server_stats(http, server.http_url)
                if how == "reset":
                    connection.reset()
            left = time.monotonic()
            async with asyncio.timeout(300):
                while True:
                    current = await server_stats(http, server.http_url)
                    since = round(time.monotonic() - left, 3)
                    if (
                        result.cancel_seen_s is None
                        and current["requests_cancelled"] > before["requests_cancelled"]
                    ):
                        result.cancel_seen_s = since
                    if idle(current):
                        result.idle_after_s = since
                        break
                    await asyncio.sleep(0.02)
    result.work = ServerWork.between(before, current)
    return result


async def run(trials: int, scheme: str) -> list[Trial]:
    server = await asyncio.to_thread(start_model_server)
    try:
        speech = server.ws_url if scheme == "ws" else server.http_url
        return [await trial(server, speech, after, how) for _ in range(trials) for after, how in CASES]
    finally:
        await asyncio.to_thread(stop_model_server, server)


def summary(results: list[Trial]) -> dict[str, Any]:
    idles = [r.idle_after_s for r in results if r.idle_after_s is not None]
    works = [r.work for r in results if r.work is not None]
    return {
        "trials": len(results),
        "requests_completed_after_max": max(w.requests_completed for w in works),
        "engine_calls_after_max": max(w.engine_calls for w in works),
        "idle_after_s_median": round(statistics.median(idles), 3) if idles else None,
        "idle_after_s_max": max(idles) if idles else None,
        "audio_for_nobody_ms_max": max(w.audio_for_nobody_ms for w in works),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.hangup_cost", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--trials", type=int, default=3, help="per case (3 cases)")
    parser.add_argument("--speech", choices=("ws", "http"), default="ws")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.out == RESULTS:  # the committed figures: only from a quiet machine
        args.out = results_path(RESULTS)
    load = os.getloadavg()
    if load[0] > 1.0:
        print(f"warning: load average {load[0]:.2f} > 1.0: not a measurement (architecture §7)")
    results = asyncio.run(run(args.trials, args.speech))
    heads = [("done", 5), ("engine", 6), ("cancelled", 9), ("nobody ms", 9), ("cancel s", 8), ("idle s", 7)]
    print(f"{'after':<12} {'how':<6} " + " ".join(f"{name:>{width}}" for name, width in heads))
    for r in results:
        w = r.work or ServerWork(0, 0, 0, 0.0, 0.0)
        print(
            f"{r.after:<12} {r.how:<6} {w.requests_completed:>5} {w.engine_calls:>6} "
            f"{w.requests_cancelled:>9} {w.audio_for_nobody_ms:>9.0f} {r.cancel_seen_s or 0:>8.3f} "
            f"{r.idle_after_s or 0:>7.3f}"
        )
    overall = summary(results)
    print(json.dumps(overall))
    document = {
        "benchmark": "hangup_cost",
        "speech": args.speech,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_avg": load},
        "load_avg_after": os.getloadavg(),
        "summary": overall,
        "trials": [asdict(r) for r in results],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
