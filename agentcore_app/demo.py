"""The demo as a client of the agent app: one prompt through BOTH modes, timed, reported, saved.

The same prompt goes through ``bidi`` and ``batch`` over real HTTP, as any client would send it, against
a given target: a running app (``http://host:port``) or a deployed AgentCore runtime
(``arn:aws:bedrock-agentcore:...``). Nothing here starts a server: ``agent-infra demo --local``
(:mod:`cdk.local_commands`) starts the model server and the agent app on this machine and hands this
module their URL, so the deployable package never depends on the launchers.

A conversation (``--turns "q1" "q2" ...`` and/or ``--session ID``) asks its questions in order, each turn
remembering the ones before (the runtime session id header). Without ``--session`` each mode gets a
fresh conversation of its own, so both modes hear the same conversation and can be compared turn by turn;
``--session ID`` continues (or starts) that one conversation in one mode (``--mode``, default bidi).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.client import INVOKE_TIMEOUT_S, TurnRecord, new_session_id, run_turn
from agentcore_app.report import (
    answer_lines,
    compared_turns,
    concatenated,
    results_json,
    speech_wait_ms,
    speedup,
    speedup_line,
    stall_ms,
    table,
    write_json,
    write_timeline,
    write_wav,
)
from strands_kokoro.protocol import DEFAULT_VOICE
from strands_kokoro.speech_options import SPEECH_MODES

DEFAULT_PROMPT = "In three or four sentences, why do cats purr?"
MODES: tuple[str, ...] = SPEECH_MODES
# What reporting needs (the timeline PNG); a launcher adds what its servers need.
REQUIRED_MODULES: tuple[str, ...] = ("matplotlib",)

Target = str | contextlib.AbstractAsyncContextManager[str]
"""An agent app URL / runtime ARN, or a context that yields one for as long as the demo runs."""


class TargetError(RuntimeError):
    """The target cannot be asked, or did not answer as an agent app does; the message names it and why."""


def check_target(endpoint: str) -> str:
    """``endpoint`` if a turn can be sent to it (an http(s) URL or a runtime ARN), else ``ValueError``.

    Checked before anything is asked: ``127.0.0.1:8080`` would otherwise fail deep inside httpx.
    """
    if endpoint.startswith("arn:"):
        from agentcore_app.ws_client import runtime_region

        runtime_region(endpoint)  # ValueError when it is not an AgentCore runtime ARN
        return endpoint
    if not endpoint.startswith(("http://", "https://")) or not endpoint.split("://", 1)[1].strip("/"):
        raise ValueError(
            f"--endpoint-url {endpoint!r}: use an agent app's http://host:port or an AgentCore runtime "
            "ARN (arn:aws:bedrock-agentcore:...)"
        )
    return endpoint


def _reason(exc: BaseException) -> str:
    said = str(exc).strip()
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


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
        choices=(*MODES, "both"),
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


@dataclass(frozen=True, slots=True)
class Delivery:
    """How the turns reach the client: the transport and the audio format (``--transport``, ``--format``)."""

    transport: str = "sse"
    audio_format: str | None = None

    @classmethod
    def of(cls, args: argparse.Namespace) -> Delivery:
        return cls(getattr(args, "transport", "sse") or "sse", getattr(args, "audio_format", None))

    def recorded(self) -> dict[str, str]:
        """How the numbers of ``--json`` were delivered (the format the app sends when none is asked)."""
        return {"transport": self.transport, "format": self.audio_format or "pcm"}

    async def turn(
        self,
        endpoint: str,
        prompt: str,
        mode: str,
        *,
        http_client: httpx.AsyncClient,
        voice: str | None,
        session_id: str | None = None,
    ) -> TurnRecord:
        """One turn, delivered this way; :class:`TargetError` when the endpoint cannot be talked to."""
        from httpx_sse import SSEError
        from websockets.exceptions import InvalidStatus, WebSocketException

        aws: tuple[type[Exception], ...] = ()
        with contextlib.suppress(ImportError):  # botocore: only for an AgentCore runtime's ARN
            from botocore.exceptions import BotoCoreError

            aws = (BotoCoreError,)
        try:
            return await run_turn(
                endpoint,
                prompt,
                mode,
                http_client=http_client,
                voice=voice,
                session_id=session_id,
                transport=self.transport,
                audio_format=self.audio_format,
            )
        except (SSEError, InvalidStatus) as exc:
            # Something answered, but not as an agent app: most often the model server's port given for
            # the agent app's (the model server answers a turn with JSON, and has no /ws).
            raise TargetError(
                f"{endpoint} answered, but not as an agent app ({_reason(exc)}); the demo talks to the agent "
                "app (python -m agentcore_app), not to the model server"
            ) from exc
        except (httpx.TransportError, WebSocketException, OSError) as exc:
            # Nothing listening, no scheme, not an agent app, a dropped connection: one line, not httpx's
            # (or websockets') traceback. OSError: the WebSocket client's connection refused / timed out.
            raise TargetError(f"{endpoint} did not answer ({_reason(exc)})") from exc
        except aws as exc:  # no credentials, no route to the region: what botocore says, in one line
            raise TargetError(f"{endpoint} could not be asked ({_reason(exc)})") from exc


async def collect(
    target: Target,
    prompt: str,
    *,
    voice: str | None = None,
    modes: tuple[str, ...] = MODES,
    delivery: Delivery = Delivery(),
) -> list[TurnRecord]:
    """Run the prompt through the modes (both by default) against the target, one after the other."""
    records: list[TurnRecord] = []
    reached = contextlib.nullcontext(target) if isinstance(target, str) else target
    async with reached as endpoint, httpx.AsyncClient(timeout=INVOKE_TIMEOUT_S) as http_client:
        for mode in modes:
            print(f"{mode}: asking {prompt!r}", file=sys.stderr)
            records.append(await delivery.turn(endpoint, prompt, mode, http_client=http_client, voice=voice))
    return records


def report(args: argparse.Namespace, records: list[TurnRecord], target: str) -> dict[str, Any]:
    """Print the table and the ratio, write the WAVs, the timeline PNG and (with --json) the numbers."""
    out_dir: Path = args.out_dir
    print()
    print(f"prompt: {args.prompt}")
    for line in answer_lines(records):
        print(line)
    print()
    print(table(records))
    compared = speedup_line(records)  # None when only one mode ran
    if compared is not None:
        print()
        print(compared)
    for record in records:
        for error in record.summary()["errors"]:
            print(f"{record.mode}: {error.get('type')} {error.get('code')}: {error.get('message')}")
    artifacts = {f"wav_{r.mode}": str(write_wav(r, out_dir / f"demo-{r.mode}.wav")) for r in records if r.pcm}
    artifacts["timeline_png"] = str(write_timeline(records, out_dir / "demo-timeline.png"))
    if args.json:
        artifacts["json"] = str(args.json)
    extra = {"prompt": args.prompt, "target": target, **Delivery.of(args).recorded(), "artifacts": artifacts}
    return _saved(results_json(records, extra | {"at": time.time()}), artifacts, args)


def run(args: argparse.Namespace, target: Target, label: str) -> int:
    """Collect and report; exit status 0 only when every turn produced audio (a silent demo failed).

    2 when the options contradict each other or the target URL cannot be one (nothing is asked then),
    and when the target cannot be reached or does not answer as an agent app: one line, no traceback.
    """
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
            records = asyncio.run(
                collect(target, args.prompt, voice=args.voice, modes=modes, delivery=Delivery.of(args))
            )
            report(args, records, label)
        else:
            conversations = asyncio.run(converse(target, plan, voice=args.voice, delivery=Delivery.of(args)))
            report_conversation(args, plan, conversations, label)
            records = [record for turns in conversations.values() for record in turns]
    except TargetError as exc:
        print(f"agent-infra demo: {exc}", file=sys.stderr)
        return 2
    return 0 if all(r.first("audio_chunk") is not None for r in records) else 1


# ------------------------------------------------------------------------------------ conversations


@dataclass(frozen=True, slots=True)
class ConversationPlan:
    """The questions, in order, and the conversation (runtime session id) each mode asks them in."""

    prompts: list[str]
    sessions: dict[str, str]


def chosen_modes(args: argparse.Namespace) -> tuple[str, ...]:
    """``--mode``: both (the default), or one; with ``--session`` the default is bidi."""
    mode = getattr(args, "mode", None) or ("bidi" if getattr(args, "session", None) else "both")
    return MODES if mode == "both" else (mode,)


def conversation_plan(args: argparse.Namespace) -> ConversationPlan | None:
    """None for the classic one-prompt demo; else the plan. ``ValueError`` when the options conflict."""
    turns: list[str] | None = getattr(args, "turns", None)
    session: str | None = getattr(args, "session", None)
    if not turns and not session:
        return None
    modes = chosen_modes(args)
    if session is not None:
        from agentcore_app.conversation_settings import SESSION_ID_PATTERN

        if not SESSION_ID_PATTERN.match(session):
            raise ValueError(f"--session {session!r}: use 33-128 letters, digits, '-' or '_'")
        if len(modes) > 1:
            raise ValueError("--session names ONE conversation: run it in one mode (--mode bidi or batch)")
        return ConversationPlan(list(turns or [args.prompt]), {modes[0]: session})
    shared = new_session_id("demo")
    return ConversationPlan(list(turns or [args.prompt]), {mode: f"{shared}-{mode}" for mode in modes})


async def converse(
    target: Target, plan: ConversationPlan, *, voice: str | None = None, delivery: Delivery = Delivery()
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
    args: argparse.Namespace, plan: ConversationPlan, conversations: dict[str, list[TurnRecord]], target: str
) -> dict[str, Any]:
    """The dialogue per mode, one table column per turn, a WAV per mode (its turns in order), PNG, JSON."""
    out_dir: Path = args.out_dir
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
    print(table(records, labels=labels))
    ratios: list[float | None] = []
    if set(conversations) == set(MODES):
        print()
        for number, (bidi, batch) in enumerate(
            zip(conversations["bidi"], conversations["batch"], strict=True), 1
        ):
            ratio = speedup(speech_wait_ms(batch.summary()), speech_wait_ms(bidi.summary()))
            ratios.append(None if ratio is None else round(ratio, 2))
            print(f"turn {number}: {compared_turns(batch.summary(), bidi.summary())}")
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
        "artifacts": artifacts,
        "at": time.time(),
        "conversations": {
            mode: {
                "session_id": plan.sessions[mode],
                "turns": [{**r.summary(), "stall_ms": round(stall_ms(r), 1)} for r in turns],
            }
            for mode, turns in conversations.items()
        },
        "bidi_first_audio_speedup_per_turn": ratios,
    }
    return _saved(results, artifacts, args)


def _saved(results: dict[str, Any], artifacts: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    """Write the numbers (with ``--json``) and say where every artifact went."""
    if args.json:
        write_json(results, args.json)
    print()
    for name, path in artifacts.items():
        print(f"{name:>13}: {path}")
    return results
