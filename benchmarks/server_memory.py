"""The model server's memory after warm-up: resident set (``VmRSS`` of ``/proc/<pid>/status``) once
``/ping`` says ready, then after one listener's 4-sentence answer, and whether torch is mapped into it.

Each configuration runs in a server process of its own (``--engine`` and ``STRANDS_KOKORO_VOCODER`` as
an operator sets them); configurations alternate over ``--rounds``. Memory figures hold under load.

    uv run --all-extras python -m benchmarks.server_memory
    uv run --all-extras python -m benchmarks.server_memory --configs onnx:static auto:auto --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from agentcore_app.local.stack import model_server
from benchmarks.capacity import measure
from benchmarks.machine import MachineAt, results_path, save_results
from tts_container.engines.onnx_engine import VARIANT_ENV

RESULTS = Path(__file__).parent / "results" / "server_memory.json"
DEFAULT_CONFIGS = ("onnx:auto", "onnx:dynamic", "auto:auto")


def status_mib(pid: int) -> dict[str, float]:
    """The process's resident set, its peak, and its anonymous and file-backed parts, in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return fields


def maps_torch(pid: int) -> bool:
    """Whether torch's library is mapped into the process."""
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


async def one_server(engine: str, variant: str) -> dict[str, Any]:
    """Start a server, read its memory when ready and after one listener's answer, stop it."""
    previous = os.environ.get(VARIANT_ENV)
    os.environ[VARIANT_ENV] = variant
    try:
        async with model_server(engine=engine) as server:
            pid = server.process.pid
            ready = status_mib(pid)
            torch = maps_torch(pid)
            await measure(server.ws_url, server.http_url, [1])
            served = status_mib(pid)
    finally:
        if previous is None:
            os.environ.pop(VARIANT_ENV, None)
        else:
            os.environ[VARIANT_ENV] = previous
    return {
        "engine": engine,
        "variant": variant,
        "ready": ready,
        "after_one_listener": served,
        "torch": torch,
    }


async def run(configs: list[str], rounds: int) -> list[dict[str, Any]]:
    results = []
    for number in range(rounds):
        for config in configs:
            engine, _, variant = config.partition(":")
            result = await one_server(engine, variant or "auto")
            result["round"] = number + 1
            results.append(result)
            print(row(result), flush=True)
    return results


def row(result: dict[str, Any]) -> str:
    ready, served = result["ready"], result["after_one_listener"]
    return (
        f"| {result['round']} | {result['engine']} | {result['variant']} | {ready['VmRSS']:.0f} "
        f"({ready['VmRSS'] * 1.048576:.0f} MB) | {served['VmRSS']:.0f} | {served['VmHWM']:.0f} "
        f"| {ready['RssAnon']:.0f} / {ready['RssFile']:.0f} | {'yes' if result['torch'] else 'no'} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--configs",
        nargs="+",
        default=list(DEFAULT_CONFIGS),
        help="ENGINE:VARIANT pairs (engine onnx/auto, vocoder variant auto/dynamic/static)",
    )
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    out = results_path(RESULTS)
    started = MachineAt.now()
    print(
        "| round | engine | vocoder | ready MiB (MB) | after one listener MiB | peak MiB | anon / file MiB "
        "| torch mapped |"
    )
    print("|---|---|---|---|---|---|---|---|")
    results = asyncio.run(run(args.configs, args.rounds))
    save_results(out, {"servers": results}, started)


if __name__ == "__main__":
    main()
