"""The machine a benchmark ran on: its load average, and a wait for it to be quiet.

A figure taken while the machine is busy (the test suite, another benchmark, a build) measures the
neighbours, not the code (architecture §7). Every benchmark records :func:`load_average` before and
after it runs; ``python -m benchmarks.machine`` blocks until the 1-minute load is below a threshold,
so a series of benchmarks can be run one after another, each on a quiet machine::

    for b in joins e2e_latency tts_latency; do
        uv run --all-extras python -m benchmarks.machine && uv run --all-extras python -m benchmarks.$b
    done
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
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


def save_results(out: Path, result: dict[str, Any], load_before: list[float]) -> None:
    """Add to ``result`` what says whether it counts (the load before and after the run, when it ran,
    on how many cores) and write it to ``out`` as JSON; a caller prints its table from it after."""
    result |= {
        "load_before": load_before,
        "load_after": load_average(),
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
