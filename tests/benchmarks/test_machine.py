"""A benchmark started on a busy machine never overwrites the committed figures."""

from __future__ import annotations

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
