"""The machine a benchmark ran on: what else used it, and a wait for it to be quiet.

A figure taken on a busy machine measures the neighbours (architecture §7). Every benchmark records the
load before it runs and, through :func:`save_results`, its neighbours' use meanwhile: every core's busy
time (steal included) less its own and its finished children's CPU time. The load after a run is not
recorded (a benchmark that fills the cores raises it itself). ``python -m benchmarks.machine`` blocks
until the 1-minute load is low, for a series of benchmarks::

    for b in joins e2e_latency tts_latency; do
        uv run --all-extras python -m benchmarks.machine && uv run --all-extras python -m benchmarks.$b
    done
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUIET_LOAD = 1.0


def load_average() -> list[float]:
    """The 1, 5 and 15-minute load averages, rounded (what a result file records)."""
    return [round(value, 2) for value in os.getloadavg()]


def wait_until_quiet(max_load: float = QUIET_LOAD, timeout_s: float = 900.0, poll_s: float = 5.0) -> bool:
    """Wait until the 1-minute load is under ``max_load``; False if it still is not after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while os.getloadavg()[0] >= max_load:
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
    return True


def results_path(path: Path) -> Path:
    """Where a benchmark starting now writes its results: ``path``, or ``results/noisy/`` beside it when
    the 1-minute load is at or above :data:`QUIET_LOAD` (the committed figures are never overwritten by
    a run that does not count). Call it before the run, when the load says what the run will share."""
    load = load_average()
    if load[0] < QUIET_LOAD:
        return path
    noisy = path.parent / "noisy" / path.name
    print(f"load average {load}: not a measurement; results go to {noisy}, not {path}", file=sys.stderr)
    return noisy


@dataclass(frozen=True, slots=True)
class MachineAt:
    """The machine at one moment: its load average, every core's busy CPU seconds since boot (None
    without ``/proc/stat``), and this process's CPU seconds with its finished children's."""

    load: list[float]
    wall_s: float
    busy_s: float | None
    own_s: float

    @classmethod
    def now(cls) -> MachineAt:
        usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        return cls(
            load=load_average(),
            wall_s=time.monotonic(),
            busy_s=_busy_cpu_s(),
            own_s=sum(u.ru_utime + u.ru_stime for u in usage),
        )

    def neighbours_load(self, later: MachineAt) -> float | None:
        """Cores' worth of CPU that everything but this process and its children used until ``later``."""
        wall = later.wall_s - self.wall_s
        if self.busy_s is None or later.busy_s is None or wall <= 0:
            return None
        others = (later.busy_s - self.busy_s) - (later.own_s - self.own_s)
        return round(max(0.0, others) / wall, 2)


def _busy_cpu_s() -> float | None:
    """Every core's busy seconds since boot: ``/proc/stat``'s first line less idle and iowait."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            ticks = [int(field) for field in stat.readline().split()[1:9]]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def save_results(out: Path, result: dict[str, Any], started: MachineAt) -> None:
    """Add to ``result`` what says whether it counts (the load before the run, what the neighbours used
    during it, the cores' worth the benchmark used itself, when it ran, on how many cores) and write it
    to ``out`` as JSON; a caller prints its table from it after. Start the benchmark's model server
    inside the run and stop it before this, so its CPU time counts as the benchmark's."""
    ended = MachineAt.now()
    result |= {
        "load_before": started.load,
        "neighbours_load": started.neighbours_load(ended),
        "own_cpus": round((ended.own_s - started.own_s) / max(ended.wall_s - started.wall_s, 1e-9), 2),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpus": os.cpu_count(),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Wait until the machine is quiet enough to benchmark.")
    parser.add_argument("--max-load", type=float, default=QUIET_LOAD, help="1-minute load to wait for")
    parser.add_argument("--timeout-s", type=float, default=900.0, help="give up after this many seconds")
    args = parser.parse_args(argv)
    quiet = wait_until_quiet(args.max_load, args.timeout_s)
    print(f"load average {load_average()} ({'quiet' if quiet else 'still busy: the figures will not count'})")
    return 0 if quiet else 1


if __name__ == "__main__":
    sys.exit(main())
