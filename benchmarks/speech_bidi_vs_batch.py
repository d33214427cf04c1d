"""First audio, bidi vs batch: the same agent, the same answer, the same server, measured in one run.

A real Strands ``Agent`` streams the tests' 4-sentence answer (``ScriptedModel``, one word per token) at
``--tokens-per-s``; KokoroSpeech speaks it over the real model server in ``bidi`` and ``batch`` mode,
turns alternating. Reports medians, the batch/bidi ratio of first audio, and the bidi floor: the model's
time to write the first chunk plus the engine's first audio for that chunk alone (architecture §7).

    uv run --all-extras python benchmarks/speech_bidi_vs_batch.py                # starts its own server
    uv run --all-extras python benchmarks/speech_bidi_vs_batch.py --endpoint ws://127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from strands import Agent

from agentcore_app.local.stack import start_model_server, stop_model_server
from benchmarks.engine_floor import engine_first_audio_ms
from benchmarks.machine import results_path
from strands_kokoro import KokoroSpeech
from tests.scripted_model import FOUR_SENTENCES, ScriptedModel

ROOT = Path(__file__).resolve().parents[1]

RESULTS = ROOT / "benchmarks" / "results" / "speech_bidi_vs_batch.json"


def _words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


async def one_turn(endpoint: str, mode: str, tokens_per_s: float) -> dict[str, Any]:
    speech = KokoroSpeech(endpoint=endpoint, mode=mode)  # type: ignore[arg-type]
    model = ScriptedModel(FOUR_SENTENCES, tokens_per_s=tokens_per_s)
    agent = Agent(model=model, hooks=[speech], callback_handler=None)
    start = time.perf_counter()
    written: list[tuple[int, float]] = []  # (words written so far, ms) per text delta
    text, first_chunk, first_chunk_written_ms, last_text_ms = "", None, None, None
    end: dict[str, Any] = {}
    async for event in speech.stream(agent, "Tell me about sea otters."):
        now_ms = (time.perf_counter() - start) * 1000
        if event["type"] == "text_delta":
            text += event["text"]
            last_text_ms = now_ms
            written.append((len(_words(text)), now_ms))
        elif event["type"] == "sentence_complete" and first_chunk is None:
            first_chunk = event["text"]
        elif event["type"] == "agent_end":
            end = dict(event)
    if first_chunk is not None:
        # When had the model written the first chunk's last word?
        n_words = len(_words(first_chunk))
        first_chunk_written_ms = round(next(ms for n, ms in written if n >= n_words), 1)
    return {
        "mode": mode,
        "first_text_ms": end.get("first_text_ms"),
        "first_audio_ms": end.get("first_audio_ms"),
        "text_done_ms": None if last_text_ms is None else round(last_text_ms, 1),
        "total_ms": end.get("total_ms"),
        "audio_ms": end.get("audio_ms"),
        "first_chunk": first_chunk,
        "first_chunk_written_ms": first_chunk_written_ms,
    }


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in rows if r[key] is not None), 1)


async def run(endpoint: str, trials: int, tokens_per_s: float) -> dict[str, Any]:
    await one_turn(endpoint, "bidi", tokens_per_s)  # warm-up: model load, caches, first connection
    rows: list[dict[str, Any]] = []
    for trial in range(trials):
        for mode in ("bidi", "batch"):
            row = await one_turn(endpoint, mode, tokens_per_s)
            rows.append({"trial": trial, **row})
            print(f"  trial {trial} {mode:5s} first audio {row['first_audio_ms']:>8} ms", flush=True)
    bidi = [r for r in rows if r["mode"] == "bidi"]
    batch = [r for r in rows if r["mode"] == "batch"]
    first_chunk = next(r["first_chunk"] for r in bidi if r["first_chunk"])
    engine_ms = await engine_first_audio_ms(endpoint, first_chunk, trials=trials)
    written_ms = next(r["first_chunk_written_ms"] for r in bidi if r["first_chunk_written_ms"] is not None)
    summary = {
        "bidi_first_audio_ms": _median(bidi, "first_audio_ms"),
        "batch_first_audio_ms": _median(batch, "first_audio_ms"),
        "text_done_ms": _median(rows, "text_done_ms"),
        "bidi_floor_ms": round(written_ms + engine_ms, 1),
        "floor_parts": {
            "first_chunk": first_chunk,
            "written_ms": written_ms,
            "engine_first_audio_ms": round(engine_ms, 1),
        },
    }
    summary["ratio_batch_over_bidi"] = round(
        summary["batch_first_audio_ms"] / summary["bidi_first_audio_ms"], 2
    )
    return {"summary": summary, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", help="a running server (ws://...); default: start one on a free port")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--tokens-per-s", type=float, default=40.0)
    args = parser.parse_args()
    out = results_path(RESULTS)
    with ExitStack() as stack:
        endpoint = args.endpoint
        if endpoint is None:
            server = start_model_server()
            stack.callback(stop_model_server, server)
            endpoint = server.ws_url
        load_before = os.getloadavg()[0]
        result = asyncio.run(run(endpoint, args.trials, args.tokens_per_s))
    s = result["summary"]
    print(
        f"\n4-sentence answer ({len(FOUR_SENTENCES)} chars) at {args.tokens_per_s:g} tokens/s, "
        f"{args.trials} trials each"
    )
    print(f"{'':28s}{'median ms':>12s}")
    print(f"{'model finished writing':28s}{s['text_done_ms']:>12}")
    print(f"{'first audio, batch':28s}{s['batch_first_audio_ms']:>12}")
    print(f"{'first audio, bidi':28s}{s['bidi_first_audio_ms']:>12}")
    print(f"{'bidi floor (write + synth)':28s}{s['bidi_floor_ms']:>12}")
    print(f"ratio batch/bidi: {s['ratio_batch_over_bidi']}x sooner in bidi")
    out.parent.mkdir(parents=True, exist_ok=True)
    # CPU synthesis time scales with contention: a loaded box compresses the ratio, so record the load.
    load = {"load_avg_1m_before": round(load_before, 2), "load_avg_1m_after": round(os.getloadavg()[0], 2)}
    print(f"load average (1 min) before/after: {load['load_avg_1m_before']} / {load['load_avg_1m_after']}")
    meta = {
        **load,
        "cpus": os.cpu_count(),
        "tokens_per_s": args.tokens_per_s,
        "trials": args.trials,
        "machine": platform.platform(),
        "endpoint": "local server (onnx engine, CPU)" if args.endpoint is None else args.endpoint,
    }
    out.write_text(json.dumps({**meta, **result}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
