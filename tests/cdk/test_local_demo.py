"""``agent-infra demo --local`` as a newcomer runs it: real weights, model server, agent app and LLM.

The one test that runs the embedded LLM through the whole stack (the agent app's own tests script it).

The launcher (:mod:`cdk.local_commands` over :mod:`cdk.local_stack`) fetches the weights through
``python -m tts_container.weights_cli``, starts ``python -m tts_container`` and the agent app on free
ports, and hands the app's URL to :mod:`agentcore_app.demo`.
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
    assert "time to first audio" in result.stdout
    # The comparison line, whichever way this run went (speed is the benchmarks' business, not a test's):
    compared = re.search(
        r"bidi first audio is [\d.]+× sooner than batch|bidi first audio is later than batch \(|"
        r"bidi and batch first audio about the same \(",
        result.stdout,
    )
    assert compared is not None, result.stdout
    assert "bidi answer:" in result.stdout or "answer (bidi, batch):" in result.stdout

    numbers = json.loads(json_path.read_text())
    assert set(numbers["modes"]) == {"bidi", "batch"}
    for mode, summary in numbers["modes"].items():
        assert summary["first_audio_ms"] is not None and summary["first_audio_ms"] > 0, mode
        assert summary["first_text_ms"] <= summary["total_ms"]
        assert summary["chunks"] >= 1 and summary["errors"] == []
        with wave.open(str(out_dir / f"demo-{mode}.wav")) as wav:
            assert wav.getnchannels() == 1 and wav.getsampwidth() == 2 and wav.getframerate() == 24_000
            assert wav.getnframes() / wav.getframerate() == pytest.approx(summary["audio_s"], abs=0.01)
            pcm = wav.readframes(wav.getnframes())
        peak = int(np.abs(np.frombuffer(pcm, dtype=np.int16).astype(np.int32)).max())
        assert summary["audio_s"] > 0.5 and peak > 1_000  # real speech, not silence
    assert numbers["bidi_first_audio_speedup"] > 0
    png = out_dir / "demo-timeline.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
