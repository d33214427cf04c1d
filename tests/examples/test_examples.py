"""Every program in ``examples/`` runs, against the local stack: the real model server, the real agent app.

The agent app answers with the scripted test double of a model (``tests.scripted_model``), so its
answers are known and short; ``speak_with_local_server.py`` runs as a user runs it, with the embedded
LLM. The SageMaker example runs against the local stand-in of SageMaker's bidirectional router
(``tests/strands_kokoro/standins``), through the real HTTP/2 SDK, as the SageMaker session tests do.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import subprocess
import sys
import wave
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import botocore.session
import pytest

from agentcore_app.app import create_app
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.local.stack import serve_asgi
from tests.model_server_process import RunningServer
from tests.scripted_model import ScriptedModel
from tests.strands_kokoro.standins.sagemaker_bidi_router import SageMakerBidiRouter

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ANSWER = "Sea otters hold hands while they sleep. They float on their backs."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def example(name: str) -> ModuleType:
    """An example file imported as a module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def run_example(name: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(EXAMPLES / f"{name}.py"), *argv]
    return await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=280, cwd=cwd
    )


@pytest.fixture
async def agent_app(model_server: RunningServer) -> AsyncIterator[str]:
    """The real agent app, answering with the scripted model, speaking through the real model server."""
    app = create_app(
        speech_endpoint=model_server.ws_url,
        model=lambda: ScriptedModel(ANSWER, tokens_per_s=200.0),
        conversations=ConversationSettings(location=None),
    )
    app.logger.setLevel(logging.WARNING)
    async with serve_asgi(app) as url:
        yield url


def wav_seconds(path: Path) -> float:
    with wave.open(str(path)) as wav:
        assert wav.getnchannels() == 1 and wav.getsampwidth() == 2
        return wav.getnframes() / wav.getframerate()


async def test_the_ws_client_prints_the_answer_and_saves_its_audio(agent_app: str, tmp_path: Path) -> None:
    ws_url = agent_app.replace("http://", "ws://") + "/ws"
    result = await run_example(
        "agent_app_ws_client", "Tell me about otters.", "--url", ws_url, "--out", "a.wav", cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert ANSWER in result.stdout and "completed: " in result.stdout
    assert wav_seconds(tmp_path / "a.wav") > 1.0


@pytest.mark.parametrize(("audio_format", "magic"), [("opus", b"OggS"), ("mp3", b"")])
async def test_save_answer_writes_one_playable_stream(
    agent_app: str, tmp_path: Path, audio_format: str, magic: bytes
) -> None:
    from strands_kokoro.audio_encoding import decode_audio

    out = tmp_path / f"answer.{audio_format}"
    argv = ["Tell me about otters.", "--url", agent_app, "--format", audio_format, "--out", out.name]
    result = await run_example("save_answer", *argv, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    saved = out.read_bytes()
    assert saved.startswith(magic) and ANSWER in result.stdout
    pcm = decode_audio(saved, "opus" if audio_format == "opus" else "mp3", 24_000)
    assert len(pcm) / 2 / 24_000 > 1.0  # the whole answer, decodable as one stream


async def test_save_answer_leaves_nothing_when_no_app_answers(tmp_path: Path) -> None:
    from tests.model_server_process import free_port

    result = await run_example("save_answer", "Hi.", "--url", f"http://127.0.0.1:{free_port()}", cwd=tmp_path)
    assert result.returncode != 0 and not any(await asyncio.to_thread(lambda: list(tmp_path.iterdir())))


async def test_the_sagemaker_example_speaks_through_the_router_stand_in(
    model_server: RunningServer, tmp_path: Path
) -> None:
    botocore_session = botocore.session.Session()
    botocore_session.set_credentials("AKIDSTANDIN", "standin-secret")
    botocore_session.set_config_variable("region", "us-east-1")
    speak = example("speak_through_sagemaker").speak
    out = tmp_path / "answer.wav"
    async with SageMakerBidiRouter(model_server.ws_url) as router:
        status = await speak(
            "Tell me about otters.",
            "sagemaker:kokoro-82m?region=us-east-1",
            ScriptedModel(ANSWER, tokens_per_s=200.0),
            str(out),
            transport=router,
            botocore_session=botocore_session,
        )
    assert status == 0 and wav_seconds(out) > 1.0
    assert router.log.endpoint_names == ["kokoro-82m"]  # it went through SageMaker's route, signed


def test_the_sagemaker_example_explains_itself() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "speak_through_sagemaker.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and "endpoint_name" in result.stdout and "--region" in result.stdout


@pytest.mark.slow
@pytest.mark.timeout(600)  # the embedded LLM writes and the CPU model server speaks the whole answer
async def test_speak_with_local_server_runs_as_a_user_runs_it(
    model_server: RunningServer, tmp_path: Path
) -> None:
    argv = ["Say hello in one short sentence.", "--model", "local", "--endpoint", model_server.ws_url]
    result = await run_example("speak_with_local_server", *argv, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "first audio: " in result.stdout and wav_seconds(tmp_path / "answer.wav") > 0.3
