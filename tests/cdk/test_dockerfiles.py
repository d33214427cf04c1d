"""The two Dockerfiles agree with the stacks and the code they package (no Docker needed: text and lock)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.version import Version

from cdk.config import BIDI_LABEL, CONTAINER_MODEL_DIR, CONTAINER_PORT, REPO_ROOT
from cdk.stacks.agent_runtime import AGENT_DOCKERFILE, MODEL_ENV, SPEECH_ENDPOINT_ENV
from cdk.stacks.model_cache import ONNX_FILES, TORCH_FILES
from cdk.stacks.speech_endpoint import TTS_DOCKERFILE


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    result = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            word, _, rest = stripped.partition(" ")
            result.append((word.upper(), rest.strip()))
    return result


def args_of(path: Path, instruction: str) -> list[str]:
    return [rest for word, rest in instructions(path) if word == instruction]


AGENT = REPO_ROOT / AGENT_DOCKERFILE
TTS = REPO_ROOT / TTS_DOCKERFILE


def test_agent_image_is_arm64_non_root_on_8080_running_the_agentcore_entrypoint() -> None:
    (base,) = args_of(AGENT, "FROM")
    assert base.startswith("--platform=linux/arm64 ")
    users = args_of(AGENT, "USER")
    assert users and users[-1] not in ("root", "0")
    assert args_of(AGENT, "EXPOSE") == [str(CONTAINER_PORT)]
    (entry,) = args_of(AGENT, "ENTRYPOINT")
    assert entry.startswith('["python", "-m", "agentcore_app"')
    assert '"--host", "0.0.0.0"' in entry and f'"--port", "{CONTAINER_PORT}"' in entry


def test_agent_image_installs_the_locked_agent_and_sagemaker_extras_with_uv() -> None:
    installs = [run for run in args_of(AGENT, "RUN") if "uv sync" in run]
    assert len(installs) == 1
    words = shlex.split(installs[0])
    assert "--frozen" in words and "--no-dev" in words
    extras = {words[i + 1] for i, word in enumerate(words) if word == "--extra"}
    assert extras == {"agent", "sagemaker"}
    copied = {rest.split()[0] for rest in args_of(AGENT, "COPY")}
    assert {"strands_kokoro", "agentcore_app"} <= copied
    assert "tts_container" not in copied


def test_agent_entrypoint_flags_exist_in_agentcore_app_main() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "agentcore_app", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "--host" in done.stdout and "--port" in done.stdout


def test_runtime_environment_names_are_the_ones_the_agent_reads() -> None:
    from agentcore_app.app import SPEECH_ENDPOINT_ENV as app_speech_env
    from agentcore_app.models import MODEL_ENV as app_model_env

    assert (app_model_env, app_speech_env) == (MODEL_ENV, SPEECH_ENDPOINT_ENV)


def test_tts_image_carries_the_bidi_label_and_serves_on_8080() -> None:
    labels = " ".join(args_of(TTS, "LABEL"))
    assert f"{BIDI_LABEL}=true" in labels
    assert args_of(TTS, "EXPOSE") == [str(CONTAINER_PORT)]
    assert args_of(TTS, "CMD") == ['["serve"]']
    serve = (REPO_ROOT / "tts_container" / "serve").read_text(encoding="utf-8")
    assert f"--host 0.0.0.0 --port {CONTAINER_PORT}" in serve
    # The stack builds it with BAKE_WEIGHTS=0: the Dockerfile must declare that build argument.
    assert any(arg.startswith("BAKE_WEIGHTS") for arg in args_of(TTS, "ARG"))


def test_tts_image_reads_weights_where_the_stack_puts_them() -> None:
    from tts_container.weights import CACHE_ENV, PART_FILES

    assert CACHE_ENV == "STRANDS_KOKORO_CACHE"  # the variable the SageMaker model sets to /opt/ml/model
    assert CONTAINER_MODEL_DIR == "/opt/ml/model"
    assert (PART_FILES["onnx"], PART_FILES["torch"]) == (ONNX_FILES, TORCH_FILES)


def test_tts_image_installs_torch_from_the_lock_at_2_10_or_later() -> None:
    installs = [shlex.split(run) for run in args_of(TTS, "RUN") if "uv sync" in run]
    assert installs and all("--frozen" in words for words in installs)
    assert any(
        words[i + 1] == "torch" for words in installs for i, w in enumerate(words[:-1]) if w == "--extra"
    )
    lock = tomllib.loads((REPO_ROOT / "uv.lock").read_text(encoding="utf-8"))
    torch_versions = [Version(p["version"]) for p in lock["package"] if p["name"] == "torch"]
    assert torch_versions and min(torch_versions) >= Version("2.10")


@pytest.mark.parametrize("dockerfile", [AGENT, TTS])
def test_dockerfiles_name_no_package_registry_host(dockerfile: Path) -> None:
    text = dockerfile.read_text(encoding="utf-8").lower()
    assert "pypi.org" not in text and "npmjs" not in text
