"""The torch engine's capacity batched across listeners and not, in one run (made for a GPU machine).

Starts the real model server with the torch engine batched (``--max-batch 32`` on CUDA) and unbatched
(``--max-batch 1``, as Kokoro-FastAPI serves), and drives 1 to 512 listeners against each with
:mod:`benchmarks.capacity`'s rounds. Per N: served and refused, first audio p50/p95, worst stall, audio
seconds per wall second; per server its forward passes and calls (``/stats``) and the device. One time
budget (``--budget-s``, 420 s) is split between the servers; no round passes its share or
``--round-cap-s``, and the larger N after a stopped round are listed unmeasured. Results:
``benchmarks/results/gpu_capacity.json`` and a copy (with the servers' logs) under ``$OUT`` if set.

    uv run --all-extras python -m benchmarks.gpu_capacity                                    # on a GPU
    uv run --all-extras python -m benchmarks.gpu_capacity --listeners 1 2 --engine torch     # CPU smoke
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcore_app.local.stack import LaunchError, model_server
from benchmarks.capacity import measure, print_table, server_stats, stall_free_capacity
from benchmarks.machine import MachineAt, results_path, save_results

RESULTS = Path(__file__).parent / "results" / "gpu_capacity.json"
DEFAULT_LISTENERS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
BUDGET_S = 420.0
ROUND_CAP_S = 90.0
CUDA_BATCH = 32
CPU_BATCH = 4  # a CPU renders four probes side by side at warm-up in seconds; 32 would take minutes
# What each server says of itself on /stats, kept with its rounds.
SERVER_STATS = (
    "inference_lanes",
    "capacity_listeners",
    "capacity_audio_per_s",
    "engine_batches",
    "engine_batched_items",
    "engine_largest_batch",
    "engine_busy_s",
    "audio_made_ms",
)


@dataclass(frozen=True, slots=True)
class Mode:
    """One server of the run: its label and ``--max-batch`` (None: the engine's own, for onnx)."""

    label: str
    max_batch: int | None


# Starts a server for a mode within a time limit (seconds) and yields its (ws://, http://) addresses.
ServerFactory = Callable[[Mode, float], AbstractAsyncContextManager[tuple[str, str]]]


def device_name() -> str:
    """The GPU the torch engine runs on (the server's machine is this one), or ``cpu``."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return str(torch.cuda.get_device_name(0)) if torch.cuda.is_available() else "cpu"


def modes(engine: str, max_batch: int) -> list[Mode]:
    """Batched then unbatched on the torch engine; the onnx engine as it is."""
    if engine != "torch":
        return [Mode(engine, None)]
    return [Mode(f"batched (max batch {max_batch})", max_batch), Mode("unbatched (max batch 1)", 1)]


def launched(engine: str, threads: int | None, logs: Path) -> ServerFactory:
    """The real model server (``python -m tts_container``) for each mode, its log in ``logs`` (512
    listeners' access lines would bury the tables)."""

    @asynccontextmanager
    async def start(mode: Mode, ready_timeout_s: float) -> AsyncIterator[tuple[str, str]]:
        extra = () if mode.max_batch is None else ("--max-batch", str(mode.max_batch))
        log = logs / f"gpu_capacity-server-{mode.max_batch or engine}.log"
        print(f"{mode.label}: starting the server (its log: {log})", file=sys.stderr, flush=True)
        async with model_server(
            log, *extra, engine=engine, threads=threads, ready_timeout_s=ready_timeout_s
        ) as server:
            yield server.ws_url, server.http_url

    return start


async def run_modes(
    run_modes_of: list[Mode],
    counts: list[int],
    start_server: ServerFactory,
    *,
    budget_s: float,
    round_cap_s: float,
) -> list[dict[str, Any]]:
    """Each mode's server and rounds, each within its share of what is left of ``budget_s``."""
    began = time.monotonic()
    results: list[dict[str, Any]] = []
    for index, mode in enumerate(run_modes_of):
        share = max(0.0, budget_s - (time.monotonic() - began)) / (len(run_modes_of) - index)
        stop_at = time.monotonic() + share
        entry: dict[str, Any] = {"mode": mode.label, "max_batch": mode.max_batch, "budget_s": round(share, 1)}
        rounds: list[dict[str, Any]] = []
        try:
            async with start_server(mode, max(share, 1.0)) as (ws_url, http_url):
                entry["server_ready_after_s"] = round(share - (stop_at - time.monotonic()), 1)
                entry["stats_before"] = _server_view(await server_stats(http_url))
                rounds = await measure(ws_url, http_url, counts, stop_at=stop_at, round_cap_s=round_cap_s)
                entry["stats_after"] = _server_view(await server_stats(http_url))
        except LaunchError as failed:
            entry["error"] = str(failed)
        entry["rounds"] = [{k: v for k, v in r.items() if k != "per_listener"} for r in rounds]
        entry["not_measured"] = counts[len(rounds) :]
        entry["stall_free_capacity"] = stall_free_capacity(rounds)
        entry["best_audio_per_wall_s"] = max((r["audio_per_wall_s"] or 0.0 for r in rounds), default=None)
        results.append(entry)
    return results


def _server_view(stats: dict[str, Any]) -> dict[str, Any]:
    return {key: stats[key] for key in SERVER_STATS if key in stats}


def summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Batched over unbatched: the stall-free capacities and the most audio per wall second."""
    if len(entries) != 2:
        return {}
    batched, unbatched = entries

    def ratio(key: str) -> float | None:
        a, b = batched.get(key), unbatched.get(key)
        return round(a / b, 2) if a and b else None

    return {
        "stall_free_capacity_ratio": ratio("stall_free_capacity"),
        "best_audio_per_wall_s_ratio": ratio("best_audio_per_wall_s"),
    }


def print_tables(result: dict[str, Any]) -> None:
    print(f"device: {result['device']}; engine {result['engine']}")
    for entry in result["modes"]:
        print(f"\n{entry['mode']}:")
        if "error" in entry:
            print(f"  the server did not start: {entry['error']}")
            continue
        print_table(
            {**result, "rounds": entry["rounds"], "stall_free_capacity": entry["stall_free_capacity"]}
        )
        after = entry.get("stats_after", {})
        if after.get("engine_batches"):
            mean = after["engine_batched_items"] / after["engine_batches"]
            print(
                f"forward passes: {after['engine_batches']}, {after['engine_batched_items']} calls in them "
                f"(mean {mean:.1f}, largest {after['engine_largest_batch']})"
            )
        if entry["not_measured"]:
            print(f"not measured (time budget or round cap): {entry['not_measured']}")
    if result["summary"]:
        print(f"\nbatched over unbatched: {result['summary']}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listeners", type=int, nargs="+", default=list(DEFAULT_LISTENERS))
    parser.add_argument("--engine", choices=("torch", "onnx"), default="torch")
    parser.add_argument(
        "--max-batch",
        type=int,
        default=None,
        help=f"the batched server's --max-batch (default: {CUDA_BATCH} on CUDA, {CPU_BATCH} on a CPU)",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="engine CPU threads (default: the server's)"
    )
    parser.add_argument("--budget-s", type=float, default=BUDGET_S, help="the whole run's time budget")
    parser.add_argument(
        "--round-cap-s", type=float, default=ROUND_CAP_S, help="the longest one round may run"
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the JSON goes")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, start_server: ServerFactory | None = None) -> Path:
    """Run, write the results (and their copy under ``$OUT``), print the tables; the results' path."""
    args = parse_args(argv)
    device = device_name()
    max_batch = args.max_batch or (CUDA_BATCH if device != "cpu" else CPU_BATCH)
    out = results_path(args.results)
    started = MachineAt.now()
    logs = Path(os.environ.get("OUT") or tempfile.gettempdir())
    factory = start_server or launched(args.engine, args.threads, logs)
    entries = asyncio.run(
        run_modes(
            modes(args.engine, max_batch),
            args.listeners,
            factory,
            budget_s=args.budget_s,
            round_cap_s=args.round_cap_s,
        )
    )
    result: dict[str, Any] = {
        "device": device,
        "engine": args.engine,
        "listeners": args.listeners,
        "budget_s": args.budget_s,
        "round_cap_s": args.round_cap_s,
        "wall_s": round(time.monotonic() - started.wall_s, 1),
        "modes": entries,
        "summary": summary(entries),
    }
    save_results(out, result, started)
    if outside := os.environ.get("OUT"):
        copy = Path(outside) / out.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {copy}")
    print_tables(result)
    return out


if __name__ == "__main__":
    main()
