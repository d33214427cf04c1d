"""``agent-infra demo --local`` as a newcomer runs it: real weights, model server, agent app and LLM.

The one test that runs the embedded LLM through the whole stack (the agent app's own tests script it).

The launcher (:mod:`agentcore_app.local.commands` over :mod:`agentcore_app.local.stack`) fetches the
weights through ``python -m tts_container.weights.cli``, starts ``python -m tts_container`` and the agent
app on free ports, and hands the app's URL to :mod:`agentcore_app.local.demo`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

AGENT_INFRA = str(Path(sys.executable).parent / "agent-infra")


@pytest.mark.slow
@pytest.mark.timeout(900)  # starts its own model server and runs two real turns: minutes on a busy CPU
def test_demo_local_writes_wavs_png_and_json(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    json_path = tmp_path / "numbers.json"
    result = subprocess.run(
        [
            AGENT_INFRA,
            "demo",
            "--local",
            "--prompt",
            "Say hello in one short sentence.",
            "--llm-pace",
            "100",
            "--repeat",
            "2",
            "--out-dir",
            str(out_dir),
            "--json",
            str(json_path),
        ],
        capture_output=True,
        text=True,
        timeout=880,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "first audio (what the listener waits)" in result.stdout
    assert "bidi, median of 2" in result.stdout and "at most 100 per second (--llm-pace)" in result.stdout
    # The comparison line, whichever way this run went (speed is the benchmarks' business, not a test's):
    compared = re.search(
        r"bidi spoke [\d.]+× sooner than batch: |bidi spoke later than batch: |"
        r"bidi and batch spoke about as soon: ",
        result.stdout,
    )
    assert compared is not None, result.stdout
    assert "bidi answer:" in result.stdout or "answer (bidi, batch):" in result.stdout

    numbers = json.loads(json_path.read_text())
    assert set(numbers["modes"]) == {"bidi", "batch"}
    assert numbers["order"] == [["bidi", "batch"], ["batch", "bidi"]]
    assert numbers["llm"] == {
        "model": "local (the embedded SmolLM2-135M-Instruct)",
        "pace_tokens_per_s": 100.0,
        "prompt_cache": "system prompt",
    }
    for mode, both in numbers["modes"].items():
        assert len(both["runs"]) == 2 and both["median"]["runs"] == 2
        summary = next(r for r in both["runs"] if r["first_audio_ms"] is not None)
        assert summary["first_audio_ms"] is not None and summary["first_audio_ms"] > 0, mode
        assert summary["first_text_ms"] <= summary["answer_written_ms"] <= summary["total_ms"]
        assert summary["chunks"] >= 1 and summary["errors"] == []
        with wave.open(str(out_dir / f"demo-{mode}.wav")) as wav:
            assert wav.getnchannels() == 1 and wav.getsampwidth() == 2 and wav.getframerate() == 24_000
            seconds = wav.getnframes() / wav.getframerate()  # the WAV is one of the runs (the typical one)
            assert any(seconds == pytest.approx(run["audio_s"], abs=0.01) for run in both["runs"])
            pcm = wav.readframes(wav.getnframes())
        peak = int(np.abs(np.frombuffer(pcm, dtype=np.int16).astype(np.int32)).max())
        assert summary["audio_s"] > 0.5 and peak > 1_000  # real speech, not silence
    assert numbers["bidi_first_audio_speedup"] > 0
    png = out_dir / "demo-timeline.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
