"""What can be checked offline of the SageMaker packaging: the Dockerfile, ``serve`` and the CLI.

Docker cannot run here, so the Dockerfile is parsed for the contract SageMaker relies on, and
``serve`` runs for real against a stand-in ``python`` that prints the command it was given.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from tts_container.__main__ import parse_args

CONTAINER = Path(__file__).resolve().parents[2] / "tts_container"
DOCKERFILE = CONTAINER / "Dockerfile"
SERVE = CONTAINER / "serve"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


def test_dockerfile_declares_the_sagemaker_contract() -> None:
    steps = instructions()
    labels = " ".join(rest for keyword, rest in steps if keyword == "LABEL")
    assert "com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true" in labels
    assert [rest for keyword, rest in steps if keyword == "EXPOSE"] == ["8080"]
    assert [rest for keyword, rest in steps if keyword == "CMD"] == ['["serve"]']
    copies = [rest for keyword, rest in steps if keyword == "COPY"]
    # `docker run <image> serve` finds it, executable for the non-root user too
    assert "--chmod=0755 tts_container/serve /usr/local/bin/serve" in copies


def test_dockerfile_uses_a_gpu_base_the_lock_and_torch_210() -> None:
    steps = instructions()
    base_arg = next(rest for keyword, rest in steps if keyword == "ARG" and rest.startswith("BASE_IMAGE="))
    assert base_arg.startswith("BASE_IMAGE=nvidia/cuda:") and "runtime" in base_arg
    runs = " ".join(rest for keyword, rest in steps if keyword == "RUN")
    assert "uv sync --frozen" in runs and "--extra torch" in runs and "--extra onnx" in runs
    assert "--no-dev" in runs and "(2, 10)" in runs  # the build fails on a torch older than 2.10
    assert "kokoro-weights fetch" in runs  # weights baked in at build time (BAKE_WEIGHTS=1)


def test_dockerfile_copies_only_paths_that_exist() -> None:
    root = DOCKERFILE.parents[1]
    for keyword, rest in instructions():
        if keyword == "COPY" and not rest.startswith("--from"):
            *sources, _ = [word for word in shlex.split(rest) if not word.startswith("--")]  # --chmod=...
            for source in sources:
                assert (root / source).exists(), f"COPY {source}: not in the build context"


def test_serve_starts_the_server_on_all_interfaces_port_8080(tmp_path: Path) -> None:
    assert SERVE.stat().st_mode & stat.S_IXUSR, "serve must be executable"
    fake_python = tmp_path / "python"
    fake_python.write_text('#!/bin/sh\necho "$@"\n')
    fake_python.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    env.pop("KOKORO_ENGINE", None)
    env.pop("KOKORO_THREADS", None)
    default = subprocess.run([str(SERVE)], env=env, capture_output=True, text=True, check=True)
    assert default.stdout.split() == [
        "-m",
        "tts_container",
        "--host",
        "0.0.0.0",
        "--port",
        "8080",
        "--engine",
        "auto",
    ]
    tuned = subprocess.run(
        [str(SERVE), "serve"],  # SageMaker passes `serve` as the argument
        env={**env, "KOKORO_ENGINE": "onnx", "KOKORO_THREADS": "4"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert tuned.stdout.split()[-4:] == ["--engine", "onnx", "--threads", "4"]


def test_cli_flags() -> None:
    args = parse_args(["--host", "0.0.0.0", "--port", "9000", "--engine", "torch", "--threads", "3"])
    assert (args.host, args.port, args.engine, args.threads) == ("0.0.0.0", 9000, "torch", 3)
    defaults = parse_args([])
    assert (defaults.host, defaults.port, defaults.engine, defaults.threads) == (
        "127.0.0.1",
        8080,
        "auto",
        None,
    )
    with pytest.raises(SystemExit):
        parse_args(["--engine", "tensorflow"])
