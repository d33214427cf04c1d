"""Everything on this machine: weights, the Kokoro model server, uvicorn, and the agent app on free ports.

The "run it all here" launchers (``agent-infra demo --local``, ``agent-infra serve``), the test fixtures and
the benchmarks start their processes and servers through this one module. The model server is a process
of its own, reached only through ``tts_container``'s command lines (``python -m tts_container`` and
``python -m tts_container.weights.cli``); the agent app runs in this process under uvicorn, on this event
loop. ``agentcore_app`` is imported inside the functions that need it, so importing this module never
loads strands or the LLM. A piece that does not come up raises :class:`LaunchError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from starlette.types import ASGIApp
    from strands.models.model import Model

MODEL_SERVER_READY_TIMEOUT_S = 600.0
MODEL_SERVER_STOP_TIMEOUT_S = 10.0
PING_PATH = "/ping"  # the SageMaker container contract: 200 once the model is loaded and warmed
PING_POLL_S = 0.2
MAX_LOG_LINE = 300  # a child's last words in a LaunchError: one terminal line or two, not a page
# The weight cache the model server reads by default; the int8 onnx export is what the CPU engine needs.
WEIGHTS_FETCH_ARGS = ("-m", "tts_container.weights.cli", "fetch", "--part", "onnx")


class LaunchError(RuntimeError):
    """A process or server this module started did not come up; the message says where to look."""


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_url(host: str, port: int) -> str:
    """``http://host:port``, with an IPv6 host in brackets."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


# ----------------------------------------------------------------------------------------- weights


async def provision_weights() -> None:
    """Fill the Kokoro weight cache if needed (``python -m tts_container.weights.cli fetch --part onnx``).

    The child's progress bar and its one-line summary go to this terminal's stderr, so a first run shows
    the download and the demo's stdout stays its report. Idempotent: a filled cache answers in a second.
    """
    process = await asyncio.create_subprocess_exec(sys.executable, *WEIGHTS_FETCH_ARGS, stdout=2)
    try:
        code = await process.wait()
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()
    if code != 0:
        raise LaunchError(f"the Kokoro weights are not ready (weights fetch exited with {code}, see above)")


# ------------------------------------------------------------------------------------ model server


@dataclass(frozen=True, slots=True)
class ModelServerProcess:
    """A ``python -m tts_container`` child: ``http_url`` for POST /invocations, ``ws_url`` for bidi."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path | None = None

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"


# What ``python -m tts_container --engine`` accepts (a test pins it to the model server's own list; cdk
# reaches the model server only through its command line).
MODEL_SERVER_ENGINES = ("onnx", "torch", "auto")


def model_server_command(
    port: int, *, engine: str = "onnx", threads: int | None = None, extra_args: Sequence[str] = ()
) -> list[str]:
    """The command line of a local model server on 127.0.0.1."""
    cmd = [sys.executable, "-m", "tts_container", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--engine", engine]
    if threads:
        cmd += ["--threads", str(threads)]
    return [*cmd, *extra_args]


def launch_model_server(
    *extra_args: str, engine: str = "onnx", threads: int | None = None, log_path: Path | None = None
) -> ModelServerProcess:
    """Start the model server on a free port and return at once (see :func:`wait_until_ready`).

    Its output goes to ``log_path``, or to this process's own stdout/stderr when None (the tests' choice:
    pytest shows it next to a failure).
    """
    port = free_port()
    cmd = model_server_command(port, engine=engine, threads=threads, extra_args=extra_args)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if log_path is None:
        return ModelServerProcess(subprocess.Popen(cmd, env=env), port)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:  # the child keeps its own copy of the handle
        process = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    return ModelServerProcess(process, port, log_path)


def wait_until_ready(
    process: subprocess.Popen[bytes],
    base_url: str,
    timeout_s: float,
    *,
    name: str = "model server",
    log_path: Path | None = None,
    abandoned: threading.Event | None = None,
) -> None:
    """Poll the child's GET /ping until it answers 200; fail as soon as it exits or the time is up.

    Both our servers answer the SageMaker/AgentCore ``/ping`` contract, so this serves either child.
    ``abandoned`` lets an async caller that was cancelled stop this (threaded) wait at the next poll.
    A model server that could not load its engine answers ``{"status": "failed"}`` and never gets
    better, so that fails at once too. Each failure is one line, ending with what the child's log said
    last.
    """
    stop = abandoned if abandoned is not None else threading.Event()
    deadline = time.monotonic() + timeout_s
    while not stop.is_set():
        code = process.poll()
        if code is not None:
            raise LaunchError(f"{name} exited with {code} before /ping answered{_told(log_path)}")
        status = _ping(base_url)
        if status == 200:
            return
        if status == "failed":
            raise LaunchError(f"{name} could not load its engine{_told(log_path)}")
        if time.monotonic() >= deadline:
            raise LaunchError(f"{name} did not answer /ping within {timeout_s:.0f} s{_told(log_path)}")
        stop.wait(PING_POLL_S)


def _ping(base_url: str) -> int | str | None:
    """GET /ping: its HTTP status, ``"failed"`` for a model server that gave up loading, None if no answer
    or an agent app still busy (``HealthyBusy``: nobody asked it anything yet, so it is warming its model)."""
    try:
        answer = httpx.get(base_url + PING_PATH, timeout=1.0)
        if answer.status_code == 503 and answer.json().get("status") == "failed":
            return "failed"
        if answer.status_code == 200 and answer.json().get("status") == "HealthyBusy":
            return None
    except (httpx.HTTPError, ValueError, AttributeError):  # not up yet; an answer that is not our JSON
        return None
    return answer.status_code


def last_log_line(log_path: Path) -> str | None:
    """The last line of a child's log that says something: not blank, not a traceback's indented frame.

    After a traceback that is the exception itself; after argparse, its ``error:`` line.
    """
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    said = [line.strip() for line in lines if line.strip() and not line[:1].isspace()]
    return said[-1][:MAX_LOG_LINE] if said else None


def _told(log_path: Path | None) -> str:
    """``: <the log's last line>; see <log>`` for a failure message, or nothing without a log."""
    if log_path is None:
        return ""
    last = last_log_line(log_path)
    return f": {last}; see {log_path}" if last else f"; see {log_path}"


def stop_model_server(server: ModelServerProcess, timeout_s: float = MODEL_SERVER_STOP_TIMEOUT_S) -> None:
    """Terminate, then kill if it does not exit within ``timeout_s``."""
    if server.process.poll() is not None:
        return
    server.process.terminate()
    try:
        server.process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


def start_model_server(
    *extra_args: str,
    engine: str = "onnx",
    threads: int | None = None,
    log_path: Path | None = None,
    ready_timeout_s: float = MODEL_SERVER_READY_TIMEOUT_S,
) -> ModelServerProcess:
    """Start ``python -m tts_container`` (real weights) and block until GET /ping == 200."""
    server = launch_model_server(*extra_args, engine=engine, threads=threads, log_path=log_path)
    try:
        wait_until_ready(server.process, server.http_url, ready_timeout_s, log_path=log_path)
    except BaseException:
        stop_model_server(server)
        raise
    return server


@contextlib.asynccontextmanager
async def model_server(
    log_path: Path | None = None,
    *extra_args: str,
    engine: str = "onnx",
    threads: int | None = None,
    ready_timeout_s: float = MODEL_SERVER_READY_TIMEOUT_S,
) -> AsyncIterator[ModelServerProcess]:
    """:func:`start_model_server` for async code: the event loop keeps running while the model loads."""
    server = launch_model_server(*extra_args, engine=engine, threads=threads, log_path=log_path)
    abandoned = threading.Event()
    try:
        try:
            await asyncio.to_thread(
                wait_until_ready,
                server.process,
                server.http_url,
                ready_timeout_s,
                log_path=log_path,
                abandoned=abandoned,
            )
        finally:
            abandoned.set()  # cancelled (Ctrl-C): the polling thread ends at its next poll
        yield server
    finally:
        await asyncio.to_thread(stop_model_server, server)


# ----------------------------------------------------------------------------------------- uvicorn


@contextlib.asynccontextmanager
async def _started_uvicorn(
    app: ASGIApp, host: str, port: int, options: dict[str, Any]
) -> AsyncIterator[tuple[str, asyncio.Task[None]]]:
    """The one "start uvicorn on this loop and wait until it listens"; stops it when the block ends.

    Yields the URL (from the bound socket, so ``port`` 0 means a free port with no race) and the task
    that runs the server, which ends when uvicorn stops.
    """
    import uvicorn  # here, not at the top: `agent-infra demo --endpoint-url` needs no server extras

    settings: dict[str, Any] = {"log_level": "warning", **options}
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, **settings))
    async with asyncio.TaskGroup() as group:
        serving = group.create_task(server.serve())
        while not server.started:
            if serving.done():
                raise LaunchError(f"uvicorn could not serve on {host}:{port} (it logged why)")
            await asyncio.sleep(0.01)
        bound = server.servers[0].sockets[0].getsockname()[1]  # the real port when ``port`` was 0
        try:
            yield http_url(host, int(bound)), serving
        finally:
            server.should_exit = True


@contextlib.asynccontextmanager
async def serve_asgi(
    app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0, **uvicorn_options: Any
) -> AsyncIterator[str]:
    """Serve an ASGI app with uvicorn on this event loop (a free port by default); yields its http URL."""
    async with _started_uvicorn(app, host, port, uvicorn_options) as (url, _):
        yield url


async def serve_until_stopped(
    app: ASGIApp, *, host: str, port: int, on_started: Callable[[str], None], **uvicorn_options: Any
) -> None:
    """Serve until uvicorn stops (Ctrl-C: uvicorn catches the signal, stops, then raises it again)."""
    async with _started_uvicorn(app, host, port, uvicorn_options) as (url, serving):
        on_started(url)
        await serving


# ------------------------------------------------------------------------------------ the agent app


@contextlib.asynccontextmanager
async def agent_app(
    speech_endpoint: str, model: str | Callable[[], Model], speech_options: dict[str, Any] | None = None
) -> AsyncIterator[str]:
    """Serve the AgentCore app in this process on a free port; yields its http URL."""
    from agentcore_app.app import create_app, server_settings

    app = create_app(speech_endpoint=speech_endpoint, model=model, speech_options=speech_options)
    app.logger.setLevel(logging.WARNING)  # the SDK logs every request at INFO: noise in a demo's output
    async with serve_asgi(app, **server_settings()) as url:
        yield url


async def warm_up_model(model: str, prompt: str | None = None) -> None:
    """Load the embedded LLM now (off the first turn's clock) and, given a prompt, pre-fill its prompt
    cache (llama.cpp reuses a cached prompt prefix). The demo's comparison keeps only the system prompt
    cached instead (:func:`agentcore_app.local.commands.compared_model`), so neither mode finds the
    other's prompt cached.
    """
    if model != "local":
        return
    from agentcore_app.agent.local_llm import LocalSmolLM2Model
    from agentcore_app.app import SYSTEM_PROMPT

    llm = LocalSmolLM2Model(max_tokens=1)
    await llm.load()
    if prompt:
        messages = [{"role": "user", "content": [{"text": prompt}]}]
        async for _ in llm.stream(messages, system_prompt=SYSTEM_PROMPT):  # type: ignore[arg-type]
            pass


WARM_UP_PROMPT = "Say hello in one short sentence."


async def warm_up_turns(agent_url: str) -> None:
    """One short turn in each mode before anything is measured.

    Why: the first turn through a fresh agent app pays one-off costs (lazy imports in strands and the
    SDK, the first speech session's connect, the first requests' allocator growth) that no later turn
    pays; a comparison that runs bidi first would charge them all to bidi.
    """
    from agentcore_app.local.client import run_turn

    async with httpx.AsyncClient(timeout=300) as http_client:
        for mode in ("bidi", "batch"):
            await run_turn(agent_url, WARM_UP_PROMPT, mode, http_client=http_client)


@dataclass(frozen=True, slots=True)
class LocalStack:
    """Where the running pieces answer."""

    agent_url: str
    speech_endpoint: str
    model_server_url: str
    model: str


@contextlib.asynccontextmanager
async def local_stack(
    log_dir: Path,
    *,
    model: str = "local",
    engine: str = "onnx",
    threads: int | None = None,
    model_factory: Callable[[], Model] | None = None,
) -> AsyncIterator[LocalStack]:
    """Weights, model server and agent app, all torn down when the block ends.

    Both inference engines share this machine's cores. Speech is the bottleneck on a CPU, so the model
    server gets every core (``threads`` None) and the embedded LLM runs at a lower OS priority
    (:func:`agentcore_app.agent.local_llm.llm_nice`): synthesis wins the cores whenever it needs them.
    ``model_factory``: builds each turn's model instead of the ``model`` setting (which still names it
    and decides what is loaded ahead).
    """
    await provision_weights()
    async with model_server(log_dir / "model_server.log", engine=engine, threads=threads) as server:
        await warm_up_model(model)
        async with agent_app(server.ws_url, model_factory or model) as agent_url:
            yield LocalStack(agent_url, server.ws_url, server.http_url, model)
