"""``examples/speak_with_local_server.py`` when the turn fails (a Bedrock model without AWS credentials).

What a newcomer sees: one log line saying what failed (no traceback at the default log level), the coded
error, no "None ms", exit status 1, and no empty WAV left behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.model_server_process import free_port

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "speak_with_local_server.py"


def test_a_failed_turn_is_reported_in_a_few_lines_and_leaves_no_wav(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_REGION="us-east-1",
    )
    argv = [sys.executable, str(EXAMPLE), "Hi", "--model", "bedrock:foo"]
    argv += ["--endpoint", f"ws://127.0.0.1:{free_port()}"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) <= 4, result.stderr
    assert "failed: NoCredentialsError: " in result.stderr  # the library's one WARNING line says why
    assert "[error: agent_failed]" in result.stderr
    assert "None ms" not in result.stdout and "first text: no text, first audio: no audio" in result.stdout
    assert "answer.wav not written" in result.stderr
    assert list(tmp_path.iterdir()) == []
