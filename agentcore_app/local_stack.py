"""The whole local stack on free ports: weights, the Kokoro model server and the agent app.

Used by ``agent-infra demo --local`` (and ``agent-infra serve --local``) so a newcomer needs nothing
configured. Why this split of processes:

- The model server runs as its own process (``python -m tts_container``), as it does in SageMaker: its
  inference threads then never compete with the in-process LLM for the GIL, which would distort timings.
- The agent app runs in this process under uvicorn, on this event loop (the SDK still runs each turn on
  its own worker loop thread), so the embedded LLM can be loaded and warmed before the first turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import uvicorn
from starlette.types import ASGIApp

if TYPE_CHECKING:
    from strands.models.model import Model

MODEL_SERVER_READY_TIMEOUT_S = 600.0


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True, slots=True)
class LocalStack:
    """Where the running pieces answer."""

    agent_url: str
    speech_endpoint: str
    model_server_url: str
    model: str


def provision_weights() -> Path:
    """Fill the Kokoro weight cache if needed (progress bar from the weight sources); return its folder."""
    from tts_container.provisioning import ensure_weights

    return Path(ensure_weights(part="onnx").root)


async def _wait_for_ping(url: str, process: asyncio.subprocess.Process, timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise RuntimeError(f"model server exited with {process.returncode}; see {log}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(url + "/ping")).status_code == 200:
                    return
            await asyncio.sleep(0.2)
    raise RuntimeError(f"model server did not answer /ping within {timeout_s:.0f} s; see {log}")


def model_server_command(port: int, *, engine: str = "onnx", threads: int | None = None) -> list[str]:
    """The command line of a local model server on 127.0.0.1 (also used by the test fixtures)."""
    cmd = [sys.executable, "-m", "tts_container", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--engine", engine]
    if threads:
        cmd += ["--threads", str(threads)]
    return cmd


@contextlib.asynccontextmanager
async def model_server(
    log_path: Path, *, engine: str = "onnx", threads: int | None = None
) -> AsyncIterator[str]:
    """Run ``python -m tts_container`` on a free port until the block ends; yields its http URL."""
    port = free_port()
    cmd = model_server_command(port, engine=engine, threads=threads)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = await asyncio.create_subprocess_exec(*cmd, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            await _wait_for_ping(url, process, MODEL_SERVER_READY_TIMEOUT_S, log_path)
            yield url
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), timeout=10)
                except TimeoutError:
                    process.kill()
                    await process.wait()


@contextlib.asynccontextmanager
async def serve_asgi(app: ASGIApp) -> AsyncIterator[str]:
    """Serve an ASGI app with uvicorn on this event loop, on a free port; yields its http URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with asyncio.TaskGroup() as group:
        serving = group.create_task(server.serve())
        while not server.started:
            if serving.done():
                raise RuntimeError(f"could not serve on port {port}")
            await asyncio.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


@contextlib.asynccontextmanager
async def agent_app(
    speech_endpoint: str, model: str | Callable[[], Model], speech_options: dict[str, Any] | None = None
) -> AsyncIterator[str]:
    """Serve the AgentCore app in this process on a free port; yields its http URL."""
    from agentcore_app.app import create_app

    app = create_app(speech_endpoint=speech_endpoint, model=model, speech_options=speech_options)
    app.logger.setLevel(logging.WARNING)  # the SDK logs every request at INFO: noise in a demo's output
    async with serve_asgi(app) as url:
        yield url


async def warm_up_model(model: str, prompt: str | None = None) -> None:
    """Load the embedded LLM now and, given the prompt, pre-fill its prompt cache.

    Why: llama.cpp reuses a cached prompt prefix, so without this the first mode run would pay prompt
    evaluation and the second would not, and the comparison would favour whichever ran second.
    """
    if model != "local":
        return
    from agentcore_app.app import SYSTEM_PROMPT
    from agentcore_app.local_llm import LocalSmolLM2Model

    llm = LocalSmolLM2Model(max_tokens=1)
    await llm.load()
    if prompt:
        messages = [{"role": "user", "content": [{"text": prompt}]}]
        async for _ in llm.stream(messages, system_prompt=SYSTEM_PROMPT):  # type: ignore[arg-type]
            pass


@contextlib.asynccontextmanager
async def local_stack(
    log_dir: Path, *, model: str = "local", engine: str = "onnx", threads: int | None = None
) -> AsyncIterator[LocalStack]:
    """Weights, model server and agent app, all torn down when the block ends.

    Both inference engines share this machine's cores. Speech is the bottleneck on a CPU, so the model
    server gets every core (``threads`` None) and the embedded LLM runs at a lower OS priority
    (:func:`agentcore_app.local_llm.llm_nice`): synthesis wins the cores whenever it needs them.
    """
    await asyncio.to_thread(provision_weights)
    async with model_server(log_dir / "model_server.log", engine=engine, threads=threads) as server_url:
        speech_endpoint = server_url.replace("http://", "ws://", 1)
        await warm_up_model(model)
        async with agent_app(speech_endpoint, model) as agent_url:
            yield LocalStack(agent_url, speech_endpoint, server_url, model)
