"""``pip install strands-kokoro`` is the client alone: the wheel, installed by itself, speaks to a server.

The wheel is built from this checkout and installed into fresh virtual environments, away from the
repository (so nothing here shadows what was installed), at the versions ``uv.lock`` pins, from uv's cache
(offline):

- with no extra: the client's own three dependencies (and theirs) and nothing else; ``import
  strands_kokoro`` and a session to the real model server synthesize a sentence; ``KokoroSpeech`` says
  it needs Strands;
- with the ``agent`` extra (Strands, and with the AgentCore SDK also Starlette and uvicorn installed):
  README's program speaks an agent's answer, and importing ``KokoroSpeech`` loads none of the servers,
  their plumbing or their dependencies.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import wave
import zipfile
from pathlib import Path

import pytest
from packaging.markers import Marker

from tests.model_server_process import RunningServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
# What importing the client must not load: the servers, their plumbing, their dependencies.
SERVER_SIDE = (
    "starlette",
    "uvicorn",
    "numpy",
    "onnxruntime",
    "tts_container",
    "agentcore_app",
    "kokoro_serving",
    "benchmarks",
)
# What the bare install must not install (the servers' packages are in the wheel, not their dependencies).
NOT_IN_THE_CLIENT = ("starlette", "uvicorn", "numpy", "onnxruntime", "strands", "benchmarks")
SENTENCE = "Sea otters hold hands while they sleep."

BARE_CLIENT = textwrap.dedent(
    """
    import asyncio, importlib.util, json, sys

    from strands_kokoro import IncrementalSentenceChunker, clean_for_speech, open_session
    from strands_kokoro.sessions import AudioData, SynthesisCompleted, SynthesizeRequest

    try:
        from strands_kokoro import KokoroSpeech
        refusal = ""
    except ImportError as exc:
        refusal = str(exc)


    async def speak(endpoint, text):
        pcm = 0
        async with open_session(endpoint) as session:
            await session.send(SynthesizeRequest(text=text, request_id="r1"))
            async for event in session.events():
                if isinstance(event, AudioData):
                    pcm += len(event.pcm)
                if isinstance(event, SynthesisCompleted):
                    return pcm, event.audio_ms


    endpoint, text, heavy = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    pcm, audio_ms = asyncio.run(speak(endpoint, clean_for_speech(text)))
    print(json.dumps({
        "sentences": IncrementalSentenceChunker().feed(text + " And"),
        "pcm": pcm,
        "audio_ms": audio_ms,
        "refusal": refusal,
        "loaded": sorted(m for m in sys.modules if m.split(".")[0] in heavy),
        "installed": sorted(m for m in heavy if importlib.util.find_spec(m) is not None),
    }))
    """
)

# Runs README's program as written, in a fresh environment: its endpoint is this test's model server and
# Bedrock's model is a scripted one (a test double: no AWS here); everything else is the program's own.
README_PROGRAM = textwrap.dedent(
    """
    import importlib.util, json, runpy, sys

    from strands_kokoro import KokoroSpeech

    program, endpoint, heavy, model_dir = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)

    import strands.models.bedrock

    sys.path.insert(0, model_dir)
    from scripted_model import ScriptedModel

    answer = "Cats purr when they are content. They purr when they are hurt, too."
    strands.models.bedrock.BedrockModel = lambda **_: ScriptedModel(answer)
    with open(program) as source:
        code = source.read().replace("ws://127.0.0.1:8080", endpoint)
    exec(compile(code, "README.md", "exec"), {"__name__": "__main__"})
    print(json.dumps({
        "loaded": loaded,
        "installed": sorted(m for m in heavy if importlib.util.find_spec(m) is not None),
    }))
    """
)


def readme_program() -> str:
    """The README's one Python block: the program a reader copies."""
    (block,) = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return block


def _uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        pytest.skip("uv is not on this machine")
    return found


def _run(*argv: str | Path, cwd: Path = ROOT) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env |= {"UV_OFFLINE": "1", "UV_PYTHON_DOWNLOADS": "never"}
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(_uv(), "build", "--wheel", "--offline", "--out-dir", out)
    (built,) = out.glob("strands_kokoro-*.whl")
    return built


def _venv(home: Path, wheel: Path, extra: str | None) -> tuple[Path, bool]:
    """A fresh virtual environment holding ``wheel`` (with ``extra``) at the versions uv.lock pins; and
    whether it holds exactly what the lock says ``wheel`` needs on this machine."""
    uv, venv, lock = _uv(), home / "venv", home / "pylock.toml"
    extras = ["--extra", extra] if extra else []
    export = [uv, "export", "--frozen", "--no-dev", "--no-emit-project", "--format", "pylock.toml"]
    _run(*export, *extras, "-o", lock)
    _run(uv, "venv", "--python", sys.executable, venv)
    python = venv / "bin" / "python"
    _run(uv, "pip", "install", "--python", python, "-r", lock)
    _run(uv, "pip", "install", "--python", python, f"strands-kokoro[{extra or ''}] @ {wheel.as_uri()}")
    listed = json.loads(_run(uv, "pip", "list", "--python", python, "--format", "json"))
    locked = {
        package["name"]
        for package in tomllib.loads(lock.read_text())["packages"]
        if "marker" not in package or Marker(package["marker"]).evaluate()
    }
    return python, {dist["name"] for dist in listed} == {*locked, "strands-kokoro"}


def test_the_wheel_carries_the_packages_and_no_benchmarks(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {
        "strands_kokoro",
        "kokoro_serving",
        "tts_container",
        "agentcore_app",
        "cdk",
    }


def test_the_bare_install_is_the_client_and_speaks(
    wheel: Path, tmp_path: Path, model_server: RunningServer
) -> None:
    python, as_locked = _venv(tmp_path, wheel, None)
    assert as_locked
    heavy = ",".join(sorted({*SERVER_SIDE, *NOT_IN_THE_CLIENT}))
    out = _run(python, "-I", "-c", BARE_CLIENT, model_server.ws_url, SENTENCE, heavy, cwd=tmp_path)
    result = json.loads(out.splitlines()[-1])
    assert result["sentences"] == [SENTENCE]
    assert result["pcm"] > 0 and result["audio_ms"] > 500
    assert "strands-kokoro[agent]" in result["refusal"]
    assert result["loaded"] == []
    assert [m for m in result["installed"] if m in NOT_IN_THE_CLIENT] == []


def test_readmes_program_with_the_agent_extra_speaks_and_loads_no_server(
    wheel: Path, tmp_path: Path, model_server: RunningServer
) -> None:
    python, as_locked = _venv(tmp_path, wheel, "agent")
    assert as_locked
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shutil.copy(ROOT / "tests" / "scripted_model.py", model_dir)
    program = tmp_path / "program.py"
    program.write_text(readme_program())
    heavy = ",".join(SERVER_SIDE)
    out = _run(
        python, "-I", "-c", README_PROGRAM, program, model_server.ws_url, heavy, model_dir, cwd=tmp_path
    )
    result = json.loads(out.splitlines()[-1])
    assert result["loaded"] == []
    assert {"starlette", "uvicorn"} <= set(result["installed"])  # the AgentCore SDK's: installed, not loaded
    assert "benchmarks" not in result["installed"]
    assert "Cats purr when they are content." in out  # the program printed the agent's result
    with wave.open(str(tmp_path / "answer.wav")) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
        assert wav.getnframes() > 24000  # both sentences spoken: over a second of audio
