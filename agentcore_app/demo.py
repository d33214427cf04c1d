"""The demo as a client of the agent app: one prompt through BOTH modes, timed, reported, saved.

The same prompt goes through ``bidi`` and ``batch`` over real HTTP, as any client would send it, against
a given target: a running app (``http://host:port``) or a deployed AgentCore runtime
(``arn:aws:bedrock-agentcore:...``). Nothing here starts a server: ``agent-infra demo --local``
(:mod:`cdk.local_commands`) starts the model server and the agent app on this machine and hands this
module their URL, so the deployable package never depends on the launchers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.client import INVOKE_TIMEOUT_S, TurnRecord, run_turn
from agentcore_app.report import results_json, speedup_line, table, write_json, write_timeline, write_wav
from strands_kokoro.protocol import DEFAULT_VOICE

DEFAULT_PROMPT = "In three or four sentences, why do cats purr?"
MODES: tuple[str, ...] = ("bidi", "batch")
# What reporting needs (the timeline PNG); a launcher adds what its servers need.
REQUIRED_MODULES: tuple[str, ...] = ("matplotlib",)

Target = str | contextlib.AbstractAsyncContextManager[str]
"""An agent app URL / runtime ARN, or a context that yields one for as long as the demo runs."""


def add_arguments(
    parser: argparse.ArgumentParser, target: argparse._MutuallyExclusiveGroup | None = None
) -> None:
    """The client's options; ``--endpoint-url`` joins ``target`` (a launcher's group holding ``--local``)."""
    (target or parser).add_argument(
        "--endpoint-url",
        help="a running agent app (http://host:port) or an AgentCore runtime ARN (arn:aws:...)",
    )
    parser.add_argument("--prompt", default=DEFAULT_PROMPT, help="what to ask the agent")
    parser.add_argument(
        "--voice", default=None, help=f"Kokoro voice (default {DEFAULT_VOICE}; e.g. am_michael, bf_emma)"
    )
    parser.add_argument("--out-dir", type=Path, default=Path("demo-out"), help="where WAVs and the PNG go")
    parser.add_argument("--json", type=Path, default=None, help="also save the numbers to this JSON file")


def missing_modules(names: Iterable[str]) -> list[str]:
    """Modules the chosen demo needs but cannot import, so it stops before minutes of work, not after."""
    return [name for name in names if importlib.util.find_spec(name) is None]


def refuse_missing(names: Iterable[str]) -> bool:
    """Print what to install and return True when any of ``names`` is missing."""
    missing = missing_modules(names)
    if missing:
        print(
            f"agent-infra demo needs {', '.join(missing)}: install the 'demo' extra "
            "(uv sync --extra demo, or pip install 'strands-kokoro[demo]')",
            file=sys.stderr,
        )
    return bool(missing)


async def collect(target: Target, prompt: str, *, voice: str | None = None) -> list[TurnRecord]:
    """Run the prompt through both modes against the target, one after the other, over real HTTP."""
    records: list[TurnRecord] = []
    reached = contextlib.nullcontext(target) if isinstance(target, str) else target
    async with reached as endpoint, httpx.AsyncClient(timeout=INVOKE_TIMEOUT_S) as http_client:
        for mode in MODES:
            print(f"{mode}: asking {prompt!r}", file=sys.stderr)
            records.append(await run_turn(endpoint, prompt, mode, http_client=http_client, voice=voice))
    return records


def report(args: argparse.Namespace, records: list[TurnRecord], target: str) -> dict[str, Any]:
    """Print the table and the ratio, write the WAVs, the timeline PNG and (with --json) the numbers."""
    out_dir: Path = args.out_dir
    print()
    print(f"prompt: {args.prompt}")
    print(f"answer: {records[0].text.strip()}")
    print()
    print(table(records))
    print()
    print(speedup_line(records))
    for record in records:
        for error in record.summary()["errors"]:
            print(f"{record.mode}: {error.get('type')} {error.get('code')}: {error.get('message')}")
    artifacts = {f"wav_{r.mode}": str(write_wav(r, out_dir / f"demo-{r.mode}.wav")) for r in records}
    artifacts["timeline_png"] = str(write_timeline(records, out_dir / "demo-timeline.png"))
    if args.json:
        artifacts["json"] = str(args.json)
    results = results_json(
        records, {"prompt": args.prompt, "target": target, "artifacts": artifacts, "at": time.time()}
    )
    if args.json:
        write_json(results, args.json)
    print()
    for name, path in artifacts.items():
        print(f"{name:>13}: {path}")
    return results


def run(args: argparse.Namespace, target: Target, label: str) -> int:
    """Collect and report; exit status 0 only when both modes produced audio (a silent demo failed)."""
    records = asyncio.run(collect(target, args.prompt, voice=args.voice))
    report(args, records, label)
    return 0 if all(r.first("audio_chunk") is not None for r in records) else 1
