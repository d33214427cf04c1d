"""The demo as a client of the agent app: one prompt through BOTH modes, timed, reported, saved.

The same prompt goes through ``bidi`` and ``batch`` over real HTTP, as any client sends it, to a running
app (``http://host:port``) or a deployed AgentCore runtime (``arn:aws:bedrock-agentcore:...``); nothing
here starts a server (``agent-infra demo --local``, :mod:`agentcore_app.local.commands`, does). Every time
counts from the moment the request was sent (what the listener waits); the modes take turns going first
(``--repeat N``: N rounds, medians reported); a local launcher gives both modes the same model state. The
table says which LLM answered and at what pace. A conversation (``--turns``, ``--session``) is
:mod:`agentcore_app.local.demo_conversation`; how turns reach the app, :mod:`agentcore_app.local.delivery`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import math
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.local.client import INVOKE_TIMEOUT_S
from agentcore_app.local.delivery import SSE_PCM, Delivery, Target, TargetError, check_target
from agentcore_app.local.demo_conversation import (
    chosen_modes,
    conversation_plan,
    converse,
    report_conversation,
    saved,
)
from agentcore_app.local.report import (
    THE_APPS_OWN,
    TIMES_FROM,
    LlmSetting,
    answer_lines,
    headline,
    measures,
    median_measures,
    speedup,
    table,
    write_wav,
)
from agentcore_app.local.timeline import write_timeline
from agentcore_app.local.turn_record import TurnRecord
from strands_kokoro.protocol import DEFAULT_VOICE
from strands_kokoro.speech_options import SPEECH_MODES

DEFAULT_PROMPT = "In five sentences, explain how bees turn flower nectar into honey."
"""Asks for an answer that takes seconds to say: where speaking while the agent writes pays off."""
__all__ = ["Delivery", "LlmSetting", "Target", "TargetError", "check_target"]  # the launchers use them
# What reporting needs (the timeline PNG); a launcher adds what its servers need.
REQUIRED_MODULES: tuple[str, ...] = ("matplotlib",)


def add_arguments(
    parser: argparse.ArgumentParser, target: argparse._MutuallyExclusiveGroup | None = None
) -> None:
    """The client's options; ``--endpoint-url`` joins ``target`` (a launcher's group holding ``--local``)."""
    (target or parser).add_argument(
        "--endpoint-url",
        help="a running agent app (http://host:port) or an AgentCore runtime ARN (arn:aws:...)",
    )
    asked = parser.add_mutually_exclusive_group()
    asked.add_argument("--prompt", default=DEFAULT_PROMPT, help="what to ask the agent")
    asked.add_argument(
        "--turns",
        nargs="+",
        metavar="Q",
        default=None,
        help="a short conversation: ask these in order, each turn remembering the ones before",
    )
    parser.add_argument(
        "--session",
        default=None,
        metavar="ID",
        help="conversation id (AgentCore runtime session id, 33-128 of A-Z a-z 0-9 - _): continue or start "
        "it, in one mode (default: a fresh conversation per mode)",
    )
    parser.add_argument(
        "--mode",
        choices=(*SPEECH_MODES, "both"),
        default=None,
        help="which modes to run (default: both; bidi with --session)",
    )
    parser.add_argument(
        "--voice", default=None, help=f"Kokoro voice (default {DEFAULT_VOICE}; e.g. am_michael, bf_emma)"
    )
    parser.add_argument(
        "--transport",
        choices=("sse", "ws"),
        default="sse",
        help="sse: POST /invocations; ws: the app's WebSocket /ws, audio in binary frames (a runtime ARN "
        "is signed with SigV4)",
    )
    parser.add_argument(
        "--format",
        dest="audio_format",
        choices=("pcm", "opus", "mp3"),
        default=None,
        help="the audio the app sends (default pcm); the WAVs are decoded from it",
    )
    parser.add_argument(
        "--repeat",
        type=_positive_int,
        default=1,
        metavar="N",
        help="ask the prompt N times in each mode, alternating which mode goes first; the table shows "
        "medians (default 1)",
    )
    parser.add_argument("--out-dir", type=Path, default=Path("demo-out"), help="where WAVs and the PNG go")
    parser.add_argument("--json", type=Path, default=None, help="also save the numbers to this JSON file")


def _positive_int(raw: str) -> int:
    if not raw.isdecimal() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"{raw!r}: give a whole number of rounds, 1 or more")
    return int(raw)


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


def rounds(modes: tuple[str, ...], repeat: int) -> list[tuple[str, ...]]:
    """The order the modes are asked in, round by round: each round reverses the one before, so neither
    mode always goes first (a machine warming up, or a cache left by the turn before, favours nobody)."""
    return [modes if number % 2 == 0 else tuple(reversed(modes)) for number in range(repeat)]


async def collect(
    target: Target,
    prompt: str,
    *,
    voice: str | None = None,
    modes: tuple[str, ...] = SPEECH_MODES,
    delivery: Delivery = SSE_PCM,
    repeat: int = 1,
) -> list[TurnRecord]:
    """Ask the prompt in every mode, ``repeat`` rounds in :func:`rounds` order; records in asked order."""
    records: list[TurnRecord] = []
    reached = contextlib.nullcontext(target) if isinstance(target, str) else target
    async with reached as endpoint, httpx.AsyncClient(timeout=INVOKE_TIMEOUT_S) as http_client:
        for number, order in enumerate(rounds(modes, repeat), 1):
            for mode in order:
                which = f" (round {number} of {repeat})" if repeat > 1 else ""
                print(f"{mode}: asking {prompt!r}{which}", file=sys.stderr)
                records.append(
                    await delivery.turn(endpoint, prompt, mode, http_client=http_client, voice=voice)
                )
    return records


def typical(runs: list[TurnRecord]) -> TurnRecord:
    """The run whose first audio is the median of its mode's (the lower one of an even count): the one
    the WAV and the timeline show."""
    timed = sorted(runs, key=lambda r: math.inf if (f := r.first("audio_chunk")) is None else f.at_ms)
    return timed[(len(timed) - 1) // 2]


def report(
    args: argparse.Namespace, records: list[TurnRecord], target: str, llm: LlmSetting = THE_APPS_OWN
) -> dict[str, Any]:
    """Print the LLM, the answers, the table (medians when repeated) and the headline; write a WAV per
    mode and the timeline PNG of each mode's typical run, and (with --json) the numbers."""
    out_dir: Path = args.out_dir
    by_mode: dict[str, list[TurnRecord]] = {}
    for record in records:
        by_mode.setdefault(record.mode, []).append(record)
    runs = {mode: [measures(r) for r in mode_runs] for mode, mode_runs in by_mode.items()}
    shown = {mode: median_measures(mode_runs) for mode, mode_runs in runs.items()}
    repeat = max((len(mode_runs) for mode_runs in by_mode.values()), default=0)
    heads = {mode: mode if repeat == 1 else f"{mode}, median of {len(by_mode[mode])}" for mode in by_mode}
    typical_runs = [typical(mode_runs) for mode_runs in by_mode.values()]
    print()
    print(f"prompt: {args.prompt}")
    print(llm.line())
    for line in answer_lines(typical_runs):
        print(line)
    print()
    print(table([(heads[mode], shown[mode]) for mode in by_mode]))
    said = headline(shown)  # None when only one mode ran
    if said is not None:
        print()
        print(said)
    for record in records:
        for error in record.summary()["errors"]:
            print(f"{record.mode}: {error.get('type')} {error.get('code')}: {error.get('message')}")
    artifacts = {
        f"wav_{r.mode}": str(write_wav(r, out_dir / f"demo-{r.mode}.wav")) for r in typical_runs if r.pcm
    }
    artifacts["timeline_png"] = str(write_timeline(typical_runs, out_dir / "demo-timeline.png"))
    if args.json:
        artifacts["json"] = str(args.json)
    ratio = None
    if said is not None:
        ratio = speedup(shown["batch"]["first_audio_ms"], shown["bidi"]["first_audio_ms"])
    results = {
        "prompt": args.prompt,
        "target": target,
        **Delivery.of(args).recorded(),
        "llm": llm.recorded(),
        "times_from": TIMES_FROM,
        "repeat": repeat,
        "order": [list(order) for order in rounds(tuple(by_mode), repeat)],
        "headline": said,
        "bidi_first_audio_speedup": None if ratio is None else round(ratio, 2),
        "modes": {mode: {"median": shown[mode], "runs": runs[mode]} for mode in by_mode},
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "artifacts": artifacts,
        "at": time.time(),
    }
    return saved(results, artifacts, args)


def run(args: argparse.Namespace, target: Target, label: str, llm: LlmSetting = THE_APPS_OWN) -> int:
    """Collect and report; exit status 0 only when every turn produced audio (a silent demo failed).

    2 when the options contradict each other or the target URL cannot be one (nothing is asked then),
    and when the target cannot be reached or does not answer as an agent app: one line, no traceback.
    With ``--voice-in`` the user speaks instead (:mod:`agentcore_app.local.voice_in`).
    """
    if getattr(args, "voice_in", None) or getattr(args, "interrupt_after", None) is not None:
        from agentcore_app.local import voice_in

        return voice_in.run(args, target, label)
    try:
        plan = conversation_plan(args)
        if isinstance(target, str):
            check_target(target)
    except ValueError as exc:
        print(f"agent-infra demo: {exc}", file=sys.stderr)
        return 2
    try:
        if plan is None:
            modes = chosen_modes(args)
            asked = collect(
                target,
                args.prompt,
                voice=args.voice,
                modes=modes,
                delivery=Delivery.of(args),
                repeat=getattr(args, "repeat", 1),
            )
            records = asyncio.run(asked)
            report(args, records, label, llm)
        else:
            conversations = asyncio.run(converse(target, plan, voice=args.voice, delivery=Delivery.of(args)))
            report_conversation(args, plan, conversations, label, llm)
            records = [record for turns in conversations.values() for record in turns]
    except TargetError as exc:
        print(f"agent-infra demo: {exc}", file=sys.stderr)
        return 2
    return 0 if all(r.first("audio_chunk") is not None for r in records) else 1
