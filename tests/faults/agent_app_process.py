"""The agent app in a process of its own, as deployed, with a scripted model: ``python -m`` this module.

Why a process and not the in-process ``agentcore_app.local.stack.agent_app``: how soon the AgentCore SDK
lets go of a turn whose caller left depends on when its bridge generator is garbage-collected, and a test
process that allocates a lot collects far sooner than a server does (the in-process app stopped within
a request; ``python -m agentcore_app`` went on for 13 requests and 20 s). So the hang-up tests run the
app exactly as ``python -m agentcore_app`` does (:func:`agentcore_app.app.server_settings`, uvloop),
with :class:`~tests.scripted_model.ScriptedModel` inside, and read what each model did from a JSON-lines
file (``--record``): one line per model call, written when the call ends or is stopped.

What the first turn's model does (``--first``; every later turn says :data:`SHORT_ANSWER`):

- ``held``: writes :data:`LONG_ANSWER` at once (200 tokens/s, so the model server has a queue of
  requests when the caller leaves, as with a fast real LLM) except its last token, which waits for an
  event nobody sets: it is still writing when the caller hangs up;
- ``tool``: says one sentence, then calls :func:`slow_lookup`, a tool that takes two minutes, with the
  tool filler off: the turn is silent (no event at all) while the tool runs;
- ``short``: :data:`SHORT_ANSWER` like the others.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterable, Iterator
from pathlib import Path
from typing import Any

import httpx
from strands import tool

from agentcore_app.local.stack import free_port, wait_until_ready
from tests.scripted_model import FOUR_SENTENCES, ScriptedCall, ScriptedModel, ToolCall

LONG_ANSWER = FOUR_SENTENCES * 4  # 16 sentences: far more speech than is heard before a hang-up
SHORT_ANSWER = "Otters hold hands. They sleep in kelp."
BEFORE_TOOL = "Let me look that up for you."
FIRST_TURNS = ("held", "tool", "short")
_record: Path | None = None  # the record file of this process (set by serve)


def note(line: dict[str, Any]) -> None:
    """Append one JSON line to the record file."""
    if _record is not None:
        with _record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


@tool
async def slow_lookup() -> str:
    """Look something up; takes two minutes (a slow tool, cancellable like any async tool)."""
    note({"tool": "started"})
    try:
        await asyncio.sleep(120)
    except asyncio.CancelledError:
        note({"tool": "cancelled"})
        raise
    note({"tool": "finished"})
    return "found it"


class RecordedModel(ScriptedModel):
    """A scripted model that appends what each call did to ``record`` when the call ends."""

    def __init__(self, answer: str | list[ScriptedCall], **options: Any) -> None:
        super().__init__(answer, **options)

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterable[Any]:  # type: ignore[override]
        try:
            async for event in super().stream(*args, **kwargs):
                yield event
        finally:
            note(
                {
                    "answer": self.calls[0].text[:40],
                    "call": self.call_index,
                    "tokens_sent": self.tokens_sent,
                    "tokens": len(self.tokens),
                    "stopped_early": self.stopped_early,
                    "finished": self.finished,
                }
            )


def serve(port: int, speech_endpoint: str, record: Path, *, first: str) -> None:
    global _record
    from agentcore_app.app import create_app, server_settings

    _record = record
    made = 0

    def new_model() -> ScriptedModel:
        nonlocal made
        made += 1
        if made == 1 and first == "held":
            never = threading.Event()
            return RecordedModel(LONG_ANSWER, tokens_per_s=200, hold_before_last=never, hold_timeout_s=300)
        if made == 1 and first == "tool":
            calls = [ScriptedCall(BEFORE_TOOL, tool=ToolCall("slow_lookup")), ScriptedCall(SHORT_ANSWER)]
            return RecordedModel(calls, tokens_per_s=50)
        return RecordedModel(SHORT_ANSWER, tokens_per_s=25)

    app = create_app(
        speech_endpoint=speech_endpoint,
        model=new_model,
        tools=[slow_lookup],
        speech_options={"tool_filler": None},  # a silent tool: no event at all while it runs
    )
    app.run(port=port, host="127.0.0.1", **server_settings())  # as `python -m agentcore_app` does


@contextlib.contextmanager
def agent_app_process(speech_endpoint: str, record: Path, *, first: str = "held") -> Iterator[str]:
    """Start the app in its own process on a free port; yield its URL; stop it on exit."""
    port = free_port()
    cmd = [sys.executable, "-m", "tests.faults.agent_app_process", str(port), speech_endpoint, str(record)]
    cmd += ["--first", first]
    process = subprocess.Popen(cmd)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(process, url, 180, name="the agent app")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def recorded(record: Path, kind: str = "answer") -> list[dict[str, Any]]:
    """What each model call (``answer``) or the slow tool (``tool``) did, in order."""
    if not record.exists():
        return []
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line]
    return [line for line in lines if kind in line]


async def agent_status(agent_url: str, http: httpx.AsyncClient, timeout_s: float = 60.0) -> str:
    """The SDK's /ping once no turn runs: ``Healthy`` (``HealthyBusy`` while a turn runs)."""
    async with asyncio.timeout(timeout_s):
        while True:
            status = str((await http.get(agent_url + "/ping")).json()["status"])
            if status == "Healthy":
                return status
            await asyncio.sleep(0.05)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("port", type=int)
    parser.add_argument("speech_endpoint")
    parser.add_argument("record", type=Path)
    parser.add_argument("--first", choices=FIRST_TURNS, default="held")
    args = parser.parse_args(argv)
    serve(args.port, args.speech_endpoint, args.record, first=args.first)


if __name__ == "__main__":
    main()
