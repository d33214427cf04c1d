"""A benchmark started on a busy machine never overwrites the committed figures."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

from benchmarks import machine


def test_a_quiet_machine_writes_the_committed_results(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (0.4, 0.5, 0.6))
    assert machine.results_path(Path("results/joins.json")) == Path("results/joins.json")


def test_a_busy_machine_writes_beside_them_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (machine.QUIET_LOAD, 2.0, 2.0))
    assert machine.results_path(Path("results/joins.json")) == Path("results/noisy/joins.json")
    assert "not a measurement" in capsys.readouterr().err


def at(busy_s: float | None, own_s: float, wall_s: float) -> machine.MachineAt:
    return machine.MachineAt(load=[0.4, 0.5, 0.6], wall_s=wall_s, busy_s=busy_s, own_s=own_s)


def test_the_neighbours_load_is_the_cpu_others_used_meanwhile() -> None:
    # 10 s of wall time, 25 CPU seconds busy on the machine, 18 of them the benchmark's own: 0.7 cores.
    assert at(100.0, 5.0, 1000.0).neighbours_load(at(125.0, 23.0, 1010.0)) == 0.7
    # Its own work alone (a child's CPU time counted when it was reaped, a tick late): none.
    assert at(100.0, 5.0, 1000.0).neighbours_load(at(119.0, 24.5, 1010.0)) == 0.0
    # No /proc/stat: nothing to say.
    assert at(None, 5.0, 1000.0).neighbours_load(at(None, 23.0, 1010.0)) is None


def test_this_machine_counts_its_busy_time() -> None:
    """Spin until this process has used 0.2 CPU seconds (however long a loaded machine takes to give
    them): the machine's busy time grew by those at least, and the process's own by exactly those."""
    before = machine.MachineAt.now()
    spun_from = time.process_time()
    while time.process_time() - spun_from < 0.2:
        pass
    after = machine.MachineAt.now()
    assert before.busy_s is not None and after.busy_s is not None
    assert after.busy_s - before.busy_s >= 0.2 - 0.02  # /proc/stat counts in 10 ms ticks per core
    assert after.own_s - before.own_s >= 0.2


def test_saved_results_say_whether_the_run_counts(tmp_path: Path) -> None:
    out = tmp_path / "results" / "capacity.json"
    started = dataclasses.replace(machine.MachineAt.now(), load=[0.4, 0.5, 0.6])
    machine.save_results(out, {"served": 2}, started)
    saved = json.loads(out.read_text())
    assert saved["served"] == 2
    assert saved["load_before"] == [0.4, 0.5, 0.6]
    assert "load_after" not in saved  # a busy benchmark's own load, not its neighbours'
    assert isinstance(saved["neighbours_load"], float)
    assert saved["cpus"] == machine.os.cpu_count()
    assert len(saved["date"]) == len("2026-12-05 12:35")
