"""Soak: many concurrent WebSocket sessions on one model server, every byte checked against its request.

Each run has its own server subprocess (its RSS is the server's alone). ``fake``: 16 sessions x 10
sentences at once on a fast fake engine whose audio is seeded by the text ("Session 3, request 7."), so
audio sent to another session, twice, torn or out of order differs. ``real``: 4 x 3 on the onnx engine,
each sentence then synthesized again alone and compared byte for byte. Reported: first audio p50/p99,
errors, mismatches, RSS before/after/peak, wall time, load (architecture §7); never a timed assert.

    uv run --all-extras python -m benchmarks.soak                    # both runs
    uv run --all-extras python -m benchmarks.soak --run fake         # just the fake engine
    uv run --all-extras python -m benchmarks.soak --run hangup       # benchmarks.soak_hangups
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from agentcore_app.local.stack import (
    ModelServerProcess,
    free_port,
    start_model_server,
    stop_model_server,
    wait_until_ready,
)
from benchmarks.machine import results_path
from strands_kokoro.protocol import WS_PATH, Close, SynthesizeRequest, control_object

RESULTS = Path(__file__).parent / "results" / "soak.json"
# Spoken numbers: the real engine says them, so each session's sentences sound different.
NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven")


@dataclass
class RequestResult:
    session: int
    request: int
    text: str
    first_audio_ms: float | None = None
    pcm: bytes = b""
    error: str | None = None


@dataclass
class RunReport:
    """One soak run, as written to the JSON (PCM left out)."""

    name: str
    engine: str
    sessions: int
    sentences_per_session: int
    requests_ok: int = 0
    audio_distinct: bool = False  # every request's right audio differs from every other's (cross-talk shows)
    errors: list[str] = field(default_factory=list)
    content_mismatches: list[str] = field(default_factory=list)
    first_audio_ms_p50: float | None = None
    first_audio_ms_p99: float | None = None
    first_audio_ms_max: float | None = None
    audio_s: float = 0.0
    wall_s: float = 0.0
    rss_mib_before: float = 0.0
    rss_mib_after: float = 0.0
    rss_mib_peak: float = 0.0
    load_avg_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_avg_after: tuple[float, float, float] = (0.0, 0.0, 0.0)


def sentence(session: int, request: int, engine: str) -> str:
    """A short sentence naming its session and request (words for the real engine: it speaks them)."""
    if engine == "fake":
        return f"Session {session}, request {request}."
    return f"Session {NUMBERS[session]}, sentence {NUMBERS[request]}."


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered) + 0.5))
    return round(ordered[min(rank, len(ordered)) - 1], 1)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


# ------------------------------------------------------------------------------------------ sessions


async def run_session(url: str, session: int, texts: list[str]) -> list[RequestResult]:
    """One session: each text sent when the previous one completed; its frames read and attributed."""
    results: list[RequestResult] = []
    async with connect(url, max_size=None) as ws:
        for request, text in enumerate(texts):
            result = RequestResult(session, request, text)
            results.append(result)
            request_id = f"s{session}-r{request}"
            started = time.perf_counter()
            await ws.send(SynthesizeRequest(text, request_id=request_id).to_wire())
            current: str | None = None
            pcm = bytearray()
            while True:
                payload = await asyncio.wait_for(ws.recv(), 300)
                frame = control_object(payload)
                if frame is None:
                    if current != request_id:
                        result.error = f"audio for {current!r} while waiting for {request_id}"
                    if result.first_audio_ms is None:
                        result.first_audio_ms = (time.perf_counter() - started) * 1000
                    pcm += payload if isinstance(payload, bytes) else payload.encode()
                    continue
                kind, frame_id = frame.get("type"), frame.get("request_id")
                if kind == "session_start":
                    continue  # the server's engine and speed, once per session: nothing to check
                if kind == "synthesis_start":
                    current = frame_id
                elif kind == "synthesis_complete" and frame_id == request_id:
                    break
                elif kind == "error" or frame_id != request_id:
                    result.error = f"{kind} {frame.get('code')} for {frame_id!r} (expected {request_id})"
                    break
            result.pcm = bytes(pcm)
        await ws.send(Close().to_wire())
    return results


async def soak(url: str, sessions: int, sentences: int, engine: str) -> list[RequestResult]:
    jobs = [run_session(url, s, [sentence(s, r, engine) for r in range(sentences)]) for s in range(sessions)]
    return [result for session in await asyncio.gather(*jobs) for result in session]


class PeakRss:
    """Samples a process's RSS in a thread while the soak runs (the event loop stays free)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = rss_mib(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mib(self.pid))

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


# ------------------------------------------------------------------------------------------- runs


Expected = Callable[[str], Awaitable[bytes]]


async def measure(
    name: str, engine: str, server: ModelServerProcess, sessions: int, sentences: int, expected: Expected
) -> RunReport:
    report = RunReport(name, engine, sessions, sentences)
    url = server.ws_url + WS_PATH
    report.load_avg_before = os.getloadavg()
    report.rss_mib_before = rss_mib(server.process.pid)
    started = time.perf_counter()
    with PeakRss(server.process.pid) as peak:
        results = await soak(url, sessions, sentences, engine)
    report.wall_s = round(time.perf_counter() - started, 2)
    report.rss_mib_after = rss_mib(server.process.pid)
    report.rss_mib_peak = peak.peak
    report.load_avg_after = os.getloadavg()
    firsts = [r.first_audio_ms for r in results if r.first_audio_ms is not None]
    report.first_audio_ms_p50 = percentile(firsts, 50)
    report.first_audio_ms_p99 = percentile(firsts, 99)
    report.first_audio_ms_max = round(max(firsts), 1) if firsts else None
    report.audio_s = round(sum(len(r.pcm) for r in results) / 2 / 24_000, 2)
    rights = [await expected(result.text) for result in results]
    report.audio_distinct = all(rights) and len(set(rights)) == len(rights)
    for result in results:
        where = f"session {result.session} request {result.request}"
        if result.error is not None:
            report.errors.append(f"{where}: {result.error}")
        elif result.pcm != await expected(result.text):
            report.content_mismatches.append(f"{where}: {len(result.pcm)} bytes differ from its text's audio")
        else:
            report.requests_ok += 1
    return report


async def fake_run(sessions: int, sentences: int) -> RunReport:
    from tests.faults.id_engine import expected_pcm

    port = free_port()
    process = launch_fake_server(port)
    server = ModelServerProcess(process, port)
    try:
        await asyncio.to_thread(wait_until_ready, process, server.http_url, 60.0)

        async def expected(text: str) -> bytes:
            return expected_pcm(text)

        return await measure("fake", "fake", server, sessions, sentences, expected)
    finally:
        await asyncio.to_thread(stop_model_server, server)


async def real_run(sessions: int, sentences: int) -> RunReport:
    server = await asyncio.to_thread(start_model_server)
    try:
        clean: dict[str, bytes] = {}

        async def expected(text: str) -> bytes:
            """The same text synthesized alone on the quiet server (Kokoro is deterministic)."""
            if text not in clean:
                [alone] = await run_session(server.ws_url + WS_PATH, 99, [text])
                clean[text] = alone.pcm if alone.error is None else b""
            return clean[text]

        return await measure("real", "onnx", server, sessions, sentences, expected)
    finally:
        await asyncio.to_thread(stop_model_server, server)


def launch_fake_server(port: int) -> subprocess.Popen[bytes]:
    """``python -m benchmarks.soak --serve-fake PORT``: its own process, so its RSS is the server's alone."""
    cmd = [sys.executable, "-m", "benchmarks.soak", "--serve-fake", str(port)]
    return subprocess.Popen(cmd, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def serve_fake(port: int) -> None:
    """The soak's fake-engine server: the real app and uvicorn settings, :class:`IdEngine` inside."""
    import uvicorn

    from tests.faults.id_engine import IdEngine
    from tts_container.__main__ import SERVER_OPTIONS
    from tts_container.app import create_app

    uvicorn.run(create_app(IdEngine), host="127.0.0.1", port=port, log_level="warning", **SERVER_OPTIONS)


# ------------------------------------------------------------------------------------------- report


def print_table(reports: list[RunReport]) -> None:
    header = (
        f"{'run':<5} {'sessions x sent.':>16} {'ok':>5} {'errors':>6} {'mismatch':>8} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'audio s':>8} {'wall s':>7} {'RSS MiB before/after/peak':>26} "
        f"{'load 1m':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in reports:
        rss = f"{r.rss_mib_before:.0f}/{r.rss_mib_after:.0f}/{r.rss_mib_peak:.0f}"
        print(
            f"{r.name:<5} {f'{r.sessions} x {r.sentences_per_session}':>16} {r.requests_ok:>5} "
            f"{len(r.errors):>6} {len(r.content_mismatches):>8} {r.first_audio_ms_p50 or 0:>8.1f} "
            f"{r.first_audio_ms_p99 or 0:>8.1f} {r.audio_s:>8.1f} {r.wall_s:>7.1f} {rss:>26} "
            f"{r.load_avg_before[0]:>8.2f}"
        )
    for r in reports:
        for problem in [*r.errors, *r.content_mismatches][:10]:
            print(f"  {r.name}: {problem}")


async def main_async(args: argparse.Namespace) -> list[RunReport]:
    reports: list[RunReport] = []
    if "fake" in args.run:
        reports.append(await fake_run(args.sessions, args.sentences))
    if "real" in args.run:
        reports.append(await real_run(args.real_sessions, args.real_sentences))
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n")[0])
    runs = ("fake", "real", "hangup")
    parser.add_argument("--run", action="append", choices=runs, help="default: fake and real")
    parser.add_argument("--sessions", type=int, default=16, help="fake run (the real run: at most 12)")
    parser.add_argument("--sentences", type=int, default=10)
    parser.add_argument("--real-sessions", type=int, default=4)
    parser.add_argument("--real-sentences", type=int, default=3)
    parser.add_argument("--serve-fake", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    given = sys.argv[1:] if argv is None else list(argv)
    if "hangup" in given:  # its own options (and JSON): everything else is for soak_hangups
        from benchmarks import soak_hangups

        if given[:2] != ["--run", "hangup"]:
            parser.error("--run hangup comes first and runs alone: --run hangup [its options]")
        return soak_hangups.main(given[2:])
    args = parser.parse_args(given)
    if args.out == RESULTS:  # the committed figures: only from a quiet machine
        args.out = results_path(RESULTS)
    if args.serve_fake is not None:
        serve_fake(args.serve_fake)
        return 0
    args.run = args.run or ["fake", "real"]
    load = os.getloadavg()
    if load[0] > 1.0:
        print(f"warning: load average {load[0]:.2f} > 1.0: not a measurement (architecture §7)")
    reports = asyncio.run(main_async(args))
    print_table(reports)
    document: dict[str, Any] = {
        "benchmark": "soak",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_avg": load},
        "load_avg_after": os.getloadavg(),
        "runs": [asdict(r) for r in reports],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(not r.errors and not r.content_mismatches for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
