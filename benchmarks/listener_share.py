"""What one listener needs of the engine: listeners served while the server is held to fewer cores.

The admission serves ``floor(capacity / share)`` listeners; this finds ``share`` by holding the model
server to a fraction of the cores (a CPU quota of a cgroup of its own: root, a writable cgroup file
system) and serving :mod:`benchmarks.capacity`'s listeners at each quota, its ``--max-listeners`` set so
its own admission never refuses one. Per quota: audio per wall second, each listener's share, the worst
stall per round. The admission's share should lie above every share that stalled.

    sudo uv run --all-extras python -m benchmarks.listener_share                     # 1.4, 1.6, 1.8 cores
    sudo uv run --all-extras python -m benchmarks.listener_share --cores 1.5 1.7 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentcore_app.local.stack import model_server
from benchmarks.capacity import STUTTER_S, measure
from benchmarks.machine import MachineAt, results_path, save_results

RESULTS = Path(__file__).parent / "results" / "listener_share.json"
CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "kokoro-listener-share"
PERIOD_US = 10_000  # a short period: the quota throttles in slices of 10 ms, not 100 ms bursts


@contextmanager
def cpu_quota(pid: int, cores: float) -> Iterator[None]:
    """Hold process ``pid`` (all its threads) to ``cores`` CPUs while inside; the group is removed after."""
    unified = (CGROUP_ROOT / "cgroup.controllers").exists()
    group = CGROUP_ROOT / GROUP if unified else CGROUP_ROOT / "cpu" / GROUP
    group.mkdir(exist_ok=True)
    quota_us = round(cores * PERIOD_US)
    if unified:
        (group / "cpu.max").write_text(f"{quota_us} {PERIOD_US}\n")
    else:
        (group / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
        (group / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")
    (group / "cgroup.procs").write_text(f"{pid}\n")
    try:
        yield
    finally:
        if unified:
            (group / "cpu.max").write_text(f"max {PERIOD_US}\n")
        else:
            (group / "cpu.cfs_quota_us").write_text("-1\n")


async def at_quota(cores: float, listeners: int, rounds: int) -> dict[str, Any]:
    """A fresh server held to ``cores``, ``rounds`` rounds of ``listeners`` at once."""
    async with model_server(None, "--max-listeners", str(listeners)) as server:
        with cpu_quota(server.process.pid, cores):
            measured = await measure(server.ws_url, server.http_url, [listeners] * rounds)
    made = [r["audio_per_wall_s"] for r in measured if r["audio_per_wall_s"]]
    return {
        "cores": cores,
        "listeners": listeners,
        "audio_per_wall_s": made,
        "share_per_listener": [round(rate / listeners, 3) for rate in made],
        "worst_stall_s": [round(r["worst_stall_s"], 3) for r in measured],
        "stuttering_rounds": sum(r["worst_stall_s"] > STUTTER_S for r in measured),
        "served": [r["served"] for r in measured],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=float, nargs="+", default=[1.4, 1.6, 1.8])
    parser.add_argument("--listeners", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("holding the server to fewer cores needs root (a cgroup of its own)")
    out = results_path(RESULTS)
    started = MachineAt.now()
    quotas = [asyncio.run(at_quota(cores, args.listeners, args.rounds)) for cores in args.cores]
    print("| server's cores | audio s per wall s | each listener's share | worst stall per round |")
    print("|---|---|---|---|")
    for q in quotas:
        stalls = ", ".join(f"{s * 1000:.0f} ms" for s in q["worst_stall_s"])
        print(f"| {q['cores']} | {q['audio_per_wall_s']} | {q['share_per_listener']} | {stalls} |")
    save_results(out, {"quotas": quotas}, started)


if __name__ == "__main__":
    main()
