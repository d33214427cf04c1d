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
from cdk.stacks.speech_endpoint import ROOT_USER_BUILD_ARG, TTS_DOCKERFILE
from tests.import_graph import imports_of, python_files

PINNED = re.compile(r"^[a-z0-9./_-]+(:[A-Za-z0-9._-]+)@sha256:[0-9a-f]{64}$")
"""``name:tag@sha256:<digest>``: the digest is what Docker uses, the tag is what a reader checks."""


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


def build_args(path: Path) -> dict[str, str]:
    """``ARG name=default`` declarations (the last one wins, as in Docker)."""
    found: dict[str, str] = {}
    for rest in args_of(path, "ARG"):
        name, _, default = rest.partition("=")
        found[name.strip()] = default.strip()
    return found


def image_references(path: Path) -> list[str]:
    """Every image the build pulls: FROM lines (ARG defaults substituted) and the syntax frontend."""
    args = build_args(path)
    stages = set()
    images = []
    for rest in args_of(path, "FROM"):
        words = [w for w in rest.split() if not w.startswith("--platform=")]
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], words[0])
        if image not in stages:
            images.append(image)
        if len(words) == 3 and words[1].upper() == "AS":
            stages.add(words[2])
    first_line = path.read_text(encoding="utf-8").splitlines()[0]
    assert first_line.startswith("# syntax="), path
    images.append(first_line.removeprefix("# syntax="))
    return images


@pytest.mark.parametrize("dockerfile", [AGENT, TTS])
def test_every_base_image_is_pinned_by_digest_with_its_tag(dockerfile: Path) -> None:
    images = image_references(dockerfile)
    assert len(images) >= 3  # frontend, uv, the base
    for image in images:
        assert PINNED.match(image), image
    # COPY --from names a pinned stage, never an image by tag.
    for rest in args_of(dockerfile, "COPY"):
        for word in rest.split():
            if word.startswith("--from="):
                assert ":" not in word and "/" not in word, rest
    text = dockerfile.read_text(encoding="utf-8")
    assert "pip install" not in text  # uv comes from the pinned image, not an unpinned download


def test_both_images_pin_the_same_uv_and_frontend() -> None:
    def pins(path: Path) -> set[str]:
        return {i for i in image_references(path) if "astral-sh/uv" in i or "docker/dockerfile" in i}

    assert pins(AGENT) == pins(TTS)
    assert len(pins(TTS)) == 2


def test_agent_image_is_arm64_non_root_on_8080_running_the_agentcore_entrypoint() -> None:
    bases = args_of(AGENT, "FROM")
    assert bases and all(base.startswith("--platform=linux/arm64 ") for base in bases)
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


FIRST_PARTY = ("strands_kokoro", "kokoro_serving", "tts_container", "agentcore_app", "cdk", "benchmarks")


def packages_reached(package: str) -> set[str]:
    """The first-party top-level packages ``package`` imports, directly or through the others it imports."""
    reached, todo = {package}, [package]
    while todo:
        for imp in (i for path in python_files(todo.pop()) for i in imports_of(path)):
            top = imp.module.split(".")[0]
            if top in FIRST_PARTY and top not in reached:
                reached.add(top)
                todo.append(top)
    return reached


@pytest.mark.parametrize(("dockerfile", "package"), [(AGENT, "agentcore_app"), (TTS, "tts_container")])
def test_each_image_copies_every_package_its_server_imports(dockerfile: Path, package: str) -> None:
    copied = {rest.split()[0] for rest in args_of(dockerfile, "COPY") if not rest.startswith("--")}
    assert packages_reached(package) <= copied


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
    from agentcore_app.agent.models import MODEL_ENV as app_model_env
    from agentcore_app.app import SPEECH_ENDPOINT_ENV as app_speech_env

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


def tts_user() -> str:
    """The user the TTS server runs as: the last USER, its build argument resolved to the default."""
    users = args_of(TTS, "USER")
    assert users, "the TTS image must name its user"
    return re.sub(r"\$\{(\w+)\}", lambda m: build_args(TTS)[m.group(1)], users[-1])


def env_of(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for rest in args_of(path, "ENV"):
        for item in shlex.split(rest):
            name, _, value = item.partition("=")
            found[name] = value
    return found


def test_tts_server_runs_as_an_unprivileged_user_that_owns_what_it_writes() -> None:
    user = tts_user()
    assert user not in ("root", "0") and user.isdigit()
    # The stack's root fallback sets exactly this build argument.
    assert (
        ROOT_USER_BUILD_ARG in build_args(TTS) and f"${{{ROOT_USER_BUILD_ARG}}}" in args_of(TTS, "USER")[-1]
    )
    runs = " ".join(args_of(TTS, "RUN"))
    (setup,) = [run for run in args_of(TTS, "RUN") if "useradd" in run]
    assert f"--uid {user}" in setup
    env = env_of(TTS)
    # Written at run time: the weight cache (baked or provisioned at start) and the home's caches.
    writable = [env["STRANDS_KOKORO_CACHE"], env["HOME"], env["XDG_CACHE_HOME"]]
    owned = re.search(r"install -d -o (\S+) -g \S+ -m 0755 ([^&]+)", setup)
    assert owned and owned.group(1) in ("kokoro", user)
    created = owned.group(2).split()
    for path in writable:
        assert path in created or f"--home-dir {path} --create-home" in setup, path
    assert CONTAINER_MODEL_DIR not in runs  # SageMaker's mount: only read, never created or re-owned


def test_tts_weights_are_baked_by_the_user_that_reads_them() -> None:
    lines = instructions(TTS)
    user_at = max(i for i, (word, _) in enumerate(lines) if word == "USER")
    bake_at = next(
        i for i, (word, rest) in enumerate(lines) if word == "RUN" and "kokoro-weights fetch" in rest
    )
    assert bake_at > user_at
    # Nothing after the switch needs root (no RUN that changes system paths).
    for word, rest in lines[user_at + 1 :]:
        assert not (word == "RUN" and ("chmod" in rest or "apt-get" in rest or "chown" in rest)), rest


def test_tts_image_reads_weights_where_the_stack_puts_them() -> None:
    from tts_container.weights.cache import CACHE_ENV, PART_FILES

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
