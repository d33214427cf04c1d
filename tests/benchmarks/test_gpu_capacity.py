"""benchmarks.gpu_capacity's run, with the tone engine's in-process server standing in for the torch
engine's (a real torch server takes minutes to warm up on a CPU): each mode gets a server and its
rounds, the time budget stops raising N, and the results land in the results file and under ``$OUT``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from benchmarks import gpu_capacity, machine
from benchmarks.gpu_capacity import Mode, modes, run_modes, summary
from tests.model_server_process import running_app
from tests.tts_container.server_fakes import ToneEngine
from tts_container.app import create_app


@asynccontextmanager
async def tone_server(mode: Mode, ready_timeout_s: float) -> AsyncIterator[tuple[str, str]]:
    async with running_app(create_app(ToneEngine)) as address:
        yield f"ws://{address}", f"http://{address}"


def test_torch_runs_batched_then_unbatched_and_onnx_as_it_is() -> None:
    assert modes("torch", 32) == [Mode("batched (max batch 32)", 32), Mode("unbatched (max batch 1)", 1)]
    assert modes("onnx", 32) == [Mode("onnx", None)]
    ratios = summary([{"stall_free_capacity": 40}, {"stall_free_capacity": 8}])
    assert ratios["stall_free_capacity_ratio"] == 5.0


def test_a_spent_budget_measures_no_round() -> None:
    entries = asyncio.run(run_modes(modes("torch", 4), [1, 2], tone_server, budget_s=0.0, round_cap_s=10.0))
    assert [entry["rounds"] for entry in entries] == [[], []]
    assert [entry["not_measured"] for entry in entries] == [[1, 2], [1, 2]]


@pytest.mark.slow
def test_the_run_writes_each_mode_s_rounds_to_its_results_and_under_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (0.1, 0.1, 0.1))  # the results file, not noisy/
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    results = tmp_path / "results" / "gpu_capacity.json"
    argv = ["--listeners", "1", "2", "--results", str(results), "--budget-s", "120", "--round-cap-s", "30"]
    assert gpu_capacity.main(argv, start_server=tone_server) == results
    written = json.loads(results.read_text())
    assert json.loads((tmp_path / "out" / "gpu_capacity.json").read_text()) == written
    assert written["device"] == "cpu"
    assert [entry["max_batch"] for entry in written["modes"]] == [4, 1]
    for entry in written["modes"]:
        assert [r["listeners"] for r in entry["rounds"]] == [1, 2]
        assert all(r["served"] + r["refused"] == r["listeners"] for r in entry["rounds"])
        assert entry["not_measured"] == []
        assert entry["stats_after"]["inference_lanes"] == 1
    assert {"load_before", "neighbours_load", "date", "cpus"} <= written.keys()
    printed = capsys.readouterr().out
    assert "batched (max batch 4):" in printed and "| listeners | served |" in printed
