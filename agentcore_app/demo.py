"""``agent-infra demo``: hear the agent speak, and see how much sooner it starts in bidi than in batch mode.

The same prompt goes through BOTH modes over real HTTP, as any client would send it, and the demo prints
what the client measured. With ``--local`` (the default when no endpoint is given) it needs nothing
configured: it provisions the Kokoro weights, starts the model server and the agent app on free ports,
and tears them down afterwards. ``--endpoint-url`` points it at a running app (``http://host:port``) or a
deployed AgentCore runtime (``arn:aws:bedrock-agentcore:...``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.client import INVOKE_TIMEOUT_S, TurnRecord, run_turn
from agentcore_app.report import results_json, speedup_line, table, write_json, write_timeline, write_wav

DEFAULT_PROMPT = "In three or four sentences, why do cats purr?"
MODES: tuple[str, ...] = ("bidi", "batch")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--local", action="store_true", help="start the model server and the agent app here (the default)"
    )
    target.add_argument(
        "--endpoint-url",
        help="a running agent app (http://host:port) or an AgentCore runtime ARN (arn:aws:...)",
    )
    parser.add_argument("--prompt", default=DEFAULT_PROMPT, help="what to ask the agent")
    parser.add_argument(
        "--model", default="local", help="with --local: local | bedrock:<id> | openai:<url>[#model]"
    )
    parser.add_argument("--voice", default=None, help="Kokoro voice, e.g. af_heart, am_michael, bf_emma")
    parser.add_argument("--out-dir", type=Path, default=Path("demo-out"), help="where WAVs and the PNG go")
    parser.add_argument("--json", type=Path, default=None, help="also save the numbers to this JSON file")


@contextlib.asynccontextmanager
async def _target(args: argparse.Namespace) -> AsyncIterator[str]:
    if args.endpoint_url:
        yield args.endpoint_url
        return
    from agentcore_app.local_stack import local_stack, warm_up_model

    print("starting the local stack (weights, model server, agent app)...", file=sys.stderr)
    async with local_stack(args.out_dir, model=args.model) as stack:
        await warm_up_model(args.model, args.prompt)
        print(
            f"agent app {stack.agent_url}, speech {stack.speech_endpoint}, model {stack.model}",
            file=sys.stderr,
        )
        yield stack.agent_url


async def collect(args: argparse.Namespace) -> list[TurnRecord]:
    """Run the prompt through both modes against the target, one after the other, over real HTTP."""
    records: list[TurnRecord] = []
    async with _target(args) as endpoint, httpx.AsyncClient(timeout=INVOKE_TIMEOUT_S) as http_client:
        for mode in MODES:
            print(f"{mode}: asking {args.prompt!r}", file=sys.stderr)
            records.append(
                await run_turn(endpoint, args.prompt, mode, http_client=http_client, voice=args.voice)
            )
    return records


def report(args: argparse.Namespace, records: list[TurnRecord]) -> dict[str, Any]:
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
    target = args.endpoint_url or f"local ({args.model})"
    results = results_json(
        records, {"prompt": args.prompt, "target": target, "artifacts": artifacts, "at": time.time()}
    )
    if args.json:
        write_json(results, args.json)
    print()
    for name, path in artifacts.items():
        print(f"{name:>13}: {path}")
    return results


def missing_extras(args: argparse.Namespace) -> list[str]:
    """Modules the chosen demo needs but cannot import, so it stops before minutes of work, not after."""
    needed = ["matplotlib"]
    if not args.endpoint_url:
        needed += ["onnxruntime", "uvicorn"] + (["xllamacpp"] if args.model == "local" else [])
    return [name for name in needed if importlib.util.find_spec(name) is None]


def main(args: argparse.Namespace) -> int:
    """Exit status 0 only when both modes produced audio: a demo that stayed silent has failed."""
    if missing := missing_extras(args):
        print(
            f"agent-infra demo needs {', '.join(missing)}: install the 'demo' extra "
            "(uv sync --extra demo, or pip install 'strands-kokoro[demo]')",
            file=sys.stderr,
        )
        return 2
    records = asyncio.run(collect(args))
    report(args, records)
    return 0 if all(r.first("audio_chunk") is not None for r in records) else 1
