"""The soak with hang-ups: half the sessions vanish at a random moment; what does nobody's audio cost?

``python -m benchmarks.soak --run hangup`` (or ``python -m benchmarks.soak_hangups``): three runs on one
real model server, each session sending all its sentences at once. ``mixed``: every second session
vanishes (TCP abort) at a seeded random moment after its first audio; ``listeners``: the listening half
alone; ``everyone``: all listening to the end. CPU time is the server's (``/proc``), audio made and
received its ``/stats``: the vanished half costs ``mixed - listeners``, less what its clients heard,
against ``everyone - listeners`` heard in full. The listening half must lose nothing: every sentence's
PCM equals the same text synthesized alone. The load is recorded; never a timed assert.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
from websockets.asyncio.client import connect

from agentcore_app.local.stack import ModelServerProcess, start_model_server, stop_model_server
from benchmarks.machine import results_path
from benchmarks.server_work import ServerWork, until_idle
from strands_kokoro.protocol import WS_PATH, Close, SynthesizeRequest, control_object

RESULTS = Path(__file__).parent / "results" / "soak_hangups.json"
NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def sentence(session: int, request: int) -> str:
    return f"Session {NUMBERS[session]} says sentence {NUMBERS[request]}, and then it goes on a little."


def cpu_s(pid: int) -> float:
    """The process's CPU time so far (user + system), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass
class SessionResult:
    session: int
    hung_up_after_s: float | None
    pcm: dict[str, bytes] = field(default_factory=dict)
    completed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def run_session(
    url: str, session: int, texts: list[str], hang_up_after_s: float | None
) -> SessionResult:
    """Send every text at once; read until all completed, or vanish ``hang_up_after_s`` after audio."""
    result = SessionResult(session, hang_up_after_s)
    ws = await connect(url, max_size=None)
    vanished = False
    try:
        for request, text in enumerate(texts):
            await ws.send(SynthesizeRequest(text, request_id=f"s{session}-r{request}").to_wire())
        first_audio_at: float | None = None
        current: str | None = None
        async with asyncio.timeout(600):
            while len(result.completed) < len(texts):
                if first_audio_at is not None and hang_up_after_s is not None:
                    left = first_audio_at + hang_up_after_s - time.monotonic()
                    try:
                        payload = await asyncio.wait_for(ws.recv(), max(left, 0.0))
                    except TimeoutError:
                        ws.transport.abort()  # vanish: no close frame, no goodbye
                        vanished = True
                        return result
                else:
                    payload = await ws.recv()
                frame = control_object(payload)
                if frame is None:
                    first_audio_at = first_audio_at or time.monotonic()
                    if current is not None and isinstance(payload, bytes):
                        result.pcm[current] = result.pcm.get(current, b"") + payload
                elif frame.get("type") == "synthesis_start":
                    current = str(frame.get("request_id"))
                elif frame.get("type") == "synthesis_complete":
                    result.completed.append(str(frame.get("request_id")))
                    current = None
                elif frame.get("type") == "error":
                    result.errors.append(json.dumps(frame)[:200])
                    return result  # other control frames (session_start, ...) carry nothing to check
        await ws.send(Close().to_wire())
    finally:
        if not vanished:
            await ws.close()
    return result


@dataclass
class RunFigures:
    name: str
    sessions: int
    work: ServerWork
    cpu_s: float
    wall_s: float
    load_avg_before: tuple[float, float, float]


async def measured(
    server: ModelServerProcess, name: str, plan: dict[int, float | None], texts: dict[int, list[str]]
) -> tuple[RunFigures, list[SessionResult]]:
    load = os.getloadavg()
    url = server.ws_url + WS_PATH
    async with httpx.AsyncClient() as http:
        before = await until_idle(http, server.http_url)
        cpu_before, started = cpu_s(server.process.pid), time.perf_counter()
        results = await asyncio.gather(*(run_session(url, s, texts[s], after) for s, after in plan.items()))
        after = await until_idle(http, server.http_url)
    figures = RunFigures(
        name,
        len(plan),
        ServerWork.between(before, after),
        cpu_s=round(cpu_s(server.process.pid) - cpu_before, 2),
        wall_s=round(time.perf_counter() - started, 2),
        load_avg_before=load,
    )
    return figures, list(results)


@dataclass
class HangupReport:
    sessions: int
    sentences_per_session: int
    seed: int
    hang_ups_s: dict[int, float] = field(default_factory=dict)
    runs: list[RunFigures] = field(default_factory=list)
    unheard_audio_s: float = 0.0  # made in the mixed run and never received
    unheard_cpu_s: float = 0.0  # the vanished half's CPU beyond what its received audio costs
    vanished_half_heard_s: float = 0.0  # audio the vanished half received before it left
    vanished_half_cpu_s: float = 0.0  # mixed - listeners: what they heard before leaving, and the rest
    vanished_half_engine_calls: int = 0
    full_cost_cpu_s: float = 0.0  # everyone - listeners: the vanished half heard in full
    full_cost_engine_calls: int = 0
    listener_sentences_ok: int = 0
    listener_sentences: int = 0
    listener_problems: list[str] = field(default_factory=list)


async def hangup_soak(sessions: int, sentences: int, max_hang_up_s: float, seed: int) -> HangupReport:
    rng = random.Random(seed)
    texts = {s: [sentence(s, r) for r in range(sentences)] for s in range(sessions)}
    hang_ups = {s: round(rng.uniform(0.0, max_hang_up_s), 2) for s in range(1, sessions, 2)}
    report = HangupReport(sessions, sentences, seed, hang_ups)
    server = await asyncio.to_thread(start_model_server)
    try:
        listeners = {s: None for s in range(0, sessions, 2)}
        mixed_plan: dict[int, float | None] = {s: hang_ups.get(s) for s in range(sessions)}
        mixed, mixed_results = await measured(server, "mixed", mixed_plan, texts)
        alone, _ = await measured(server, "listeners", dict(listeners), texts)
        everyone, _ = await measured(server, "everyone", dict.fromkeys(range(sessions)), texts)
        report.runs = [mixed, alone, everyone]
        report.unheard_audio_s = round(mixed.work.audio_for_nobody_ms / 1000, 2)
        made_s = alone.work.audio_made_ms / 1000
        cpu_per_audio_s = alone.cpu_s / made_s if made_s else 0.0
        report.vanished_half_cpu_s = round(mixed.cpu_s - alone.cpu_s, 2)
        report.vanished_half_heard_s = round((mixed.work.audio_sent_ms - alone.work.audio_sent_ms) / 1000, 2)
        heard_cpu_s = report.vanished_half_heard_s * cpu_per_audio_s
        report.unheard_cpu_s = round(report.vanished_half_cpu_s - heard_cpu_s, 2)
        report.vanished_half_engine_calls = mixed.work.engine_calls - alone.work.engine_calls
        report.full_cost_cpu_s = round(everyone.cpu_s - alone.cpu_s, 2)
        report.full_cost_engine_calls = everyone.work.engine_calls - alone.work.engine_calls
        # The listening half of the mixed run lost nothing: each sentence as when spoken alone.
        url = server.ws_url + WS_PATH
        for result in mixed_results:
            if result.hung_up_after_s is not None:
                continue
            report.listener_problems += [f"session {result.session}: {e}" for e in result.errors]
            for request, text in enumerate(texts[result.session]):
                report.listener_sentences += 1
                request_id = f"s{result.session}-r{request}"
                clean = await run_session(url, 99, [text], None)
                if request_id in result.completed and result.pcm.get(request_id) == clean.pcm.get("s99-r0"):
                    report.listener_sentences_ok += 1
                else:
                    report.listener_problems.append(f"{request_id}: missing or not its text's audio")
    finally:
        await asyncio.to_thread(stop_model_server, server)
    return report


def print_report(report: HangupReport) -> None:
    columns = [("sessions", 8), ("CPU s", 7), ("engine calls", 12), ("completed", 9), ("cancelled", 9)]
    columns += [("audio made s", 12), ("sent s", 7), ("wall s", 7)]
    print(f"{'run':<10} " + " ".join(f"{name:>{width}}" for name, width in columns))
    for run in report.runs:
        work = run.work
        print(
            f"{run.name:<10} {run.sessions:>8} {run.cpu_s:>7.2f} {work.engine_calls:>12} "
            f"{work.requests_completed:>9} {work.requests_cancelled:>9} {work.audio_made_ms / 1000:>12.2f} "
            f"{work.audio_sent_ms / 1000:>7.2f} {run.wall_s:>7.1f}"
        )
    r = report
    print(
        f"the vanished half cost {r.vanished_half_cpu_s:.2f} CPU s ({r.vanished_half_engine_calls} engine "
        f"calls), {r.vanished_half_heard_s:.2f} s of audio heard before it left: {r.unheard_cpu_s:.2f} CPU s "
        f"on speech nobody heard ({r.unheard_audio_s:.2f} s made and never sent); heard in full it costs "
        f"{r.full_cost_cpu_s:.2f} CPU s ({r.full_cost_engine_calls} calls); "
        f"listeners: {r.listener_sentences_ok}/{r.listener_sentences} sentences intact"
    )
    for problem in report.listener_problems[:10]:
        print(f"  {problem}")


def main(argv: list[str] | None = None) -> int:
    prog = "python -m benchmarks.soak_hangups"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=6, help="at most 12 (half hang up)")
    parser.add_argument("--sentences", type=int, default=4)
    parser.add_argument("--max-hang-up-s", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.out == RESULTS:  # the committed figures: only from a quiet machine
        args.out = results_path(RESULTS)
    load = os.getloadavg()
    if load[0] > 1.0:
        print(f"warning: load average {load[0]:.2f} > 1.0: not a measurement (architecture §7)")
    report = asyncio.run(hangup_soak(args.sessions, args.sentences, args.max_hang_up_s, args.seed))
    print_report(report)
    document = {
        "benchmark": "soak_hangups",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_avg": load},
        "load_avg_after": os.getloadavg(),
        "report": asdict(report),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.out}")
    intact = report.listener_sentences_ok == report.listener_sentences and not report.listener_problems
    return 0 if intact else 1


if __name__ == "__main__":
    sys.exit(main())
