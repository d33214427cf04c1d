"""A benchmark started on a busy machine never overwrites the committed figures."""

from __future__ import annotations

import json
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


def test_saved_results_record_the_load_around_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (1.5, 1.0, 0.8))
    out = tmp_path / "results" / "capacity.json"
    machine.save_results(out, {"served": 2}, [0.4, 0.5, 0.6])
    saved = json.loads(out.read_text())
    assert saved["served"] == 2
    assert saved["load_before"] == [0.4, 0.5, 0.6]
    assert saved["load_after"] == [1.5, 1.0, 0.8]
    assert saved["cpus"] == machine.os.cpu_count()
    assert len(saved["date"]) == len("2026-12-05 12:35")
