"""The demo as a short conversation: ``--turns "q1" "q2" ...`` and/or ``--session ID``.

The questions are asked in order, each turn remembering the ones before (the runtime session id header).
Without ``--session`` each mode gets a fresh conversation of its own, so both modes hear the same
conversation and can be compared turn by turn; ``--session ID`` continues (or starts) that one
conversation in one mode (``--mode``, default bidi).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.local.client import INVOKE_TIMEOUT_S
from agentcore_app.local.delivery import SSE_PCM, Delivery, Target
from agentcore_app.local.report import (
    THE_APPS_OWN,
    TIMES_FROM,
    LlmSetting,
    comparison,
    concatenated,
    measures,
    record_columns,
    speedup,
    table,
    write_json,
    write_wav,
)
from agentcore_app.local.timeline import write_timeline
from agentcore_app.local.turn_record import TurnRecord
from agentcore_app.runtime_session import new_session_id
from strands_kokoro.speech_options import SPEECH_MODES


@dataclass(frozen=True, slots=True)
class ConversationPlan:
    """The questions, in order, and the conversation (runtime session id) each mode asks them in."""

    prompts: list[str]
    sessions: dict[str, str]


def chosen_modes(args: argparse.Namespace) -> tuple[str, ...]:
    """``--mode``: both (the default), or one; with ``--session`` the default is bidi."""
    mode = getattr(args, "mode", None) or ("bidi" if getattr(args, "session", None) else "both")
    return SPEECH_MODES if mode == "both" else (mode,)


def conversation_plan(args: argparse.Namespace) -> ConversationPlan | None:
    """None for the classic one-prompt demo; else the plan. ``ValueError`` when the options conflict."""
    turns: list[str] | None = getattr(args, "turns", None)
    session: str | None = getattr(args, "session", None)
    if not turns and not session:
        return None
    if getattr(args, "repeat", 1) > 1:
        raise ValueError("--repeat compares one prompt: leave it out with --turns or --session")
    modes = chosen_modes(args)
    if session is not None:
        from agentcore_app.conversation.settings import SESSION_ID_PATTERN

        if not SESSION_ID_PATTERN.match(session):
            raise ValueError(f"--session {session!r}: use 33-128 letters, digits, '-' or '_'")
        if len(modes) > 1:
            raise ValueError("--session names ONE conversation: run it in one mode (--mode bidi or batch)")
        return ConversationPlan(list(turns or [args.prompt]), {modes[0]: session})
    shared = new_session_id("demo")
    return ConversationPlan(list(turns or [args.prompt]), {mode: f"{shared}-{mode}" for mode in modes})


async def converse(
    target: Target, plan: ConversationPlan, *, voice: str | None = None, delivery: Delivery = SSE_PCM
) -> dict[str, list[TurnRecord]]:
    """Each mode asks every question of the plan in order, in its own conversation; records per mode."""
    conversations: dict[str, list[TurnRecord]] = {}
    reached = contextlib.nullcontext(target) if isinstance(target, str) else target
    async with reached as endpoint, httpx.AsyncClient(timeout=INVOKE_TIMEOUT_S) as http_client:
        for mode, session_id in plan.sessions.items():
            turns = conversations.setdefault(mode, [])
            for number, prompt in enumerate(plan.prompts, 1):
                print(f"{mode} turn {number} ({session_id}): asking {prompt!r}", file=sys.stderr)
                turns.append(
                    await delivery.turn(
                        endpoint, prompt, mode, http_client=http_client, voice=voice, session_id=session_id
                    )
                )
    return conversations


def report_conversation(
    args: argparse.Namespace,
    plan: ConversationPlan,
    conversations: dict[str, list[TurnRecord]],
    target: str,
    llm: LlmSetting = THE_APPS_OWN,
) -> dict[str, Any]:
    """The dialogue per mode, one table column per turn, a WAV per mode (its turns in order), PNG, JSON."""
    out_dir: Path = args.out_dir
    print()
    print(llm.line())
    for mode, turns in conversations.items():
        print()
        print(f"{mode} conversation {plan.sessions[mode]}:")
        for prompt, record in zip(plan.prompts, turns, strict=True):
            print(f"  you:   {prompt}")
            print(f"  agent: {record.text.strip()}")
            for error in record.summary()["errors"]:
                print(f"  {error.get('type')} {error.get('code')}: {error.get('message')}")
    records = [record for turns in conversations.values() for record in turns]
    labels = [f"{mode} #{n}" for mode, turns in conversations.items() for n in range(1, len(turns) + 1)]
    print()
    print(table(record_columns(records, labels)))
    ratios: list[float | None] = []
    if set(conversations) == set(SPEECH_MODES):
        print()
        for number, (bidi, batch) in enumerate(
            zip(conversations["bidi"], conversations["batch"], strict=True), 1
        ):
            batch_ms, bidi_ms = batch.summary()["first_audio_ms"], bidi.summary()["first_audio_ms"]
            ratio = speedup(batch_ms, bidi_ms)
            ratios.append(None if ratio is None else round(ratio, 2))
            print(f"turn {number}: {comparison(batch_ms, bidi_ms)}")
    artifacts = {
        f"wav_{mode}": str(write_wav(concatenated(turns), out_dir / f"demo-{mode}.wav"))
        for mode, turns in conversations.items()
    }
    artifacts["timeline_png"] = str(write_timeline(records, out_dir / "demo-timeline.png", labels=labels))
    if args.json:
        artifacts["json"] = str(args.json)
    results: dict[str, Any] = {
        "prompts": plan.prompts,
        "target": target,
        **Delivery.of(args).recorded(),
        "llm": llm.recorded(),
        "times_from": TIMES_FROM,
        "artifacts": artifacts,
        "at": time.time(),
        "conversations": {
            mode: {"session_id": plan.sessions[mode], "turns": [measures(r) for r in turns]}
            for mode, turns in conversations.items()
        },
        "bidi_first_audio_speedup_per_turn": ratios,
    }
    return saved(results, artifacts, args)


def saved(results: dict[str, Any], artifacts: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    """Write the numbers (with ``--json``) and say where every artifact went."""
    if args.json:
        write_json(results, args.json)
    print()
    for name, path in artifacts.items():
        print(f"{name:>13}: {path}")
    return results
