"""The agent app in a process of its own, as deployed, with a scripted model: ``python -m`` this module.

Why a process and not the in-process ``cdk.local_stack.agent_app``: how soon the AgentCore SDK lets go
of a turn whose caller left depends on when its bridge generator is garbage-collected, and a test
process that allocates a lot collects far sooner than a server does (the in-process app stopped within
a request; ``python -m agentcore_app`` went on for 13 requests and 20 s). So the hang-up tests run the
app exactly as ``python -m agentcore_app`` does (:func:`agentcore_app.app.server_settings`, uvloop),
with :class:`~tests.scripted_model.ScriptedModel` inside, and read what each model did from a JSON-lines
file (``--record``): one line per model call, written when the call ends or is stopped.

With ``held_first`` the first turn's model writes :data:`LONG_ANSWER` at once (200 tokens/s, so the
model server has a queue of requests when the caller leaves, as with a fast real LLM) except its last
token, which waits for an event nobody sets: it is still writing when the caller hangs up. Every other
turn says :data:`SHORT_ANSWER`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterable, Iterator
from pathlib import Path
from typing import Any

from cdk.local_stack import free_port, wait_until_ready
from tests.scripted_model import FOUR_SENTENCES, ScriptedModel

LONG_ANSWER = FOUR_SENTENCES * 4  # 16 sentences: far more speech than is heard before a hang-up
SHORT_ANSWER = "Otters hold hands. They sleep in kelp."


class RecordedModel(ScriptedModel):
    """A scripted model that appends what each call did to ``record`` when the call ends."""

    def __init__(self, record: Path, answer: str, **options: Any) -> None:
        super().__init__(answer, **options)
        self.record = record

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterable[Any]:  # type: ignore[override]
        try:
            async for event in super().stream(*args, **kwargs):
                yield event
        finally:
            line = {
                "answer": self.calls[0].text[:40],
                "tokens_sent": self.tokens_sent,
                "tokens": len(self.tokens),
                "stopped_early": self.stopped_early,
                "finished": self.finished,
            }
            with self.record.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")


def serve(port: int, speech_endpoint: str, record: Path, *, held_first: bool) -> None:
    from agentcore_app.app import create_app, server_settings

    made = 0

    def new_model() -> ScriptedModel:
        nonlocal made
        made += 1
        if made == 1 and held_first:
            never = threading.Event()
            return RecordedModel(
                record, LONG_ANSWER, tokens_per_s=200, hold_before_last=never, hold_timeout_s=300
            )
        return RecordedModel(record, SHORT_ANSWER, tokens_per_s=25)

    app = create_app(speech_endpoint=speech_endpoint, model=new_model)
    app.run(port=port, host="127.0.0.1", **server_settings())  # as `python -m agentcore_app` does


@contextlib.contextmanager
def agent_app_process(speech_endpoint: str, record: Path, *, held_first: bool = True) -> Iterator[str]:
    """Start the app in its own process on a free port; yield its URL; stop it on exit."""
    port = free_port()
    cmd = [sys.executable, "-m", "tests.faults.agent_app_process", str(port), speech_endpoint, str(record)]
    if held_first:
        cmd.append("--held-first")
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


def recorded(record: Path) -> list[dict[str, Any]]:
    """What each model call did, in the order the calls ended."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("port", type=int)
    parser.add_argument("speech_endpoint")
    parser.add_argument("record", type=Path)
    parser.add_argument("--held-first", action="store_true")
    args = parser.parse_args(argv)
    serve(args.port, args.speech_endpoint, args.record, held_first=args.held_first)


if __name__ == "__main__":
    main()
