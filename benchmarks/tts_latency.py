"""Isolated TTS latency and throughput of the model server, over its real WebSocket.

The seed's measurement (architecture §1): first audio of a 267-character, 4-sentence text sent whole
against its first sentence alone, 5 trials each, medians and their ratio (a server that streams per
segment keeps the ratio near 1). Also: real-time factor and first audio per engine, audio seconds per
wall second with 1, 2 and 4 sessions, and ``/ping`` latency while synthesis runs.

    uv run --all-extras python benchmarks/tts_latency.py                  # starts an onnx server
    uv run --all-extras python benchmarks/tts_latency.py --engine onnx --engine torch
    uv run --all-extras python benchmarks/tts_latency.py --url ws://127.0.0.1:8080   # a running server
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

from agentcore_app.local.stack import start_model_server, stop_model_server
from benchmarks.machine import MachineAt, results_path, save_results
from strands_kokoro.protocol import (
    DEFAULT_VOICE,
    WS_PATH,
    AudioFormatName,
    Close,
    ErrorCode,
    ServerError,
    SynthesisCompleted,
    SynthesizeRequest,
    control_object,
    parse_control,
)

TEXT = (
    "Streaming text to speech lets a voice agent start talking before it has finished thinking. "
    "Each sentence goes to the model the moment it is written. "
    "The listener hears the first words while the rest is still being generated. "
    "That is why the first one matters so much."
)
FIRST_SENTENCE = TEXT.split(". ")[0] + "."
SEED_GPU_MS = {"whole": 329.3, "first_sentence": 156.7}
RESULTS = Path(__file__).parent / "results" / "tts_latency.json"


@dataclass(frozen=True)
class Trial:
    """One request over a fresh session: client-side first audio byte and end, server's audio_ms."""

    first_audio_ms: float
    total_ms: float
    audio_ms: float


async def synthesize_once(
    ws_url: str, text: str, voice: str = DEFAULT_VOICE, audio_format: AudioFormatName = "pcm"
) -> Trial:
    """Connect, send one ``synthesize`` (audio in ``audio_format``), read to ``synthesis_complete``; time
    from the send."""
    async with connect(f"{ws_url}{WS_PATH}", max_size=None) as ws:
        started = time.perf_counter()
        await ws.send(SynthesizeRequest(text, voice=voice, format=audio_format).to_wire().encode())
        first: float | None = None
        while True:
            obj = control_object(await ws.recv())
            if obj is None:  # audio
                first = first if first is not None else time.perf_counter()
                continue
            frame = parse_control(obj)
            if isinstance(frame, ServerError):
                raise RuntimeError(f"server error: {frame}")
            if isinstance(frame, SynthesisCompleted):
                end = time.perf_counter()
                await ws.send(Close().to_wire().encode())
                assert first is not None, "no audio before synthesis_complete"
                return Trial((first - started) * 1000, (end - started) * 1000, frame.audio_ms)


async def session_throughput(ws_url: str, sessions: int, sentences: list[str]) -> dict[str, float]:
    """``sessions`` concurrent sessions, each sending all its sentences at once (pipelined); a session the
    server refuses (``overloaded``: admission) adds no audio and is counted in ``refused``."""

    async def one(index: int) -> float | None:
        async with connect(f"{ws_url}{WS_PATH}", max_size=None) as ws:
            for sentence in sentences:
                request = SynthesizeRequest(sentence, request_id=f"{index}-{sentence[:8]}")
                await ws.send(request.to_wire().encode())
            audio = 0.0
            done = 0
            while done < len(sentences):
                obj = control_object(await ws.recv())
                frame = None if obj is None else parse_control(obj)
                if isinstance(frame, SynthesisCompleted):
                    audio += frame.audio_ms
                    done += 1
                elif isinstance(frame, ServerError) and frame.code == ErrorCode.OVERLOADED and not audio:
                    return None
                elif isinstance(frame, ServerError):
                    raise RuntimeError(f"server error: {frame}")
            await ws.send(Close().to_wire().encode())
            return audio / 1000

    started = time.perf_counter()
    async with asyncio.TaskGroup() as tasks:
        runs = [tasks.create_task(one(i)) for i in range(sessions)]
    wall = time.perf_counter() - started
    audio_s = sum(run.result() or 0.0 for run in runs)
    refused = sum(run.result() is None for run in runs)
    return {
        "sessions": sessions,
        "refused": refused,
        "audio_s": audio_s,
        "wall_s": wall,
        "audio_s_per_s": audio_s / wall,
    }


async def ping_during_synthesis(ws_url: str, http_url: str, probes: int = 20) -> dict[str, float]:
    """/ping latency while 2 sessions keep the engine busy (the load is dropped after the probes)."""
    latencies: list[float] = []
    async with httpx.AsyncClient(timeout=10) as client, asyncio.TaskGroup() as tasks:
        load = [tasks.create_task(synthesize_once(ws_url, TEXT)) for _ in range(2)]
        await asyncio.sleep(0.3)
        for _ in range(probes):
            started = time.perf_counter()
            response = await client.get(f"{http_url}/ping")
            latencies.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
            await asyncio.sleep(0.1)
        for task in load:
            task.cancel()  # a disconnect mid-synthesis: the server drops the rest
    return {"probes": len(latencies), "median_ms": statistics.median(latencies), "max_ms": max(latencies)}


async def measure(ws_url: str, http_url: str, trials: int) -> dict[str, Any]:
    await synthesize_once(ws_url, FIRST_SENTENCE)  # one more warm-up on top of the server's own
    whole: list[Trial] = []
    first: list[Trial] = []
    for trial in range(trials):  # interleaved, so drift in machine load hits both alike
        whole.append(await synthesize_once(ws_url, TEXT))
        first.append(await synthesize_once(ws_url, FIRST_SENTENCE))
        progress(f"trial {trial + 1}: whole {whole[-1]}, first sentence {first[-1]}")
    whole_ms = statistics.median(t.first_audio_ms for t in whole)
    first_ms = statistics.median(t.first_audio_ms for t in first)
    # Two sentences per session keep the run short on a loaded CPU; still pipelined within a session.
    sentences = [s if s.endswith(".") else s + "." for s in TEXT.split(". ")][:2]
    throughput = []
    for sessions in (1, 2, 4):
        throughput.append(await session_throughput(ws_url, sessions, sentences))
        progress(f"throughput: {throughput[-1]}")
    return {
        "ttfa_whole_ms": whole_ms,
        "ttfa_first_sentence_ms": first_ms,
        "ttfa_ratio_whole_over_first": whole_ms / first_ms,
        "rtf_whole": statistics.median(t.total_ms / t.audio_ms for t in whole),
        "rtf_first_sentence": statistics.median(t.total_ms / t.audio_ms for t in first),
        "trials_whole": [asdict(t) for t in whole],
        "trials_first_sentence": [asdict(t) for t in first],
        "throughput": throughput,
        "ping_during_synthesis": await ping_during_synthesis(ws_url, http_url),
    }


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def model_server(engine: str, threads: int | None) -> Iterator[tuple[str, str]]:
    """A fresh ``python -m tts_container`` until the block ends, ready (model loaded and warm)."""
    log = Path(tempfile.gettempdir()) / f"tts_latency-{engine}-server.log"
    server = start_model_server(engine=engine, threads=threads, log_path=log, ready_timeout_s=900)
    try:
        yield server.ws_url, server.http_url
    finally:
        stop_model_server(server, timeout_s=20)


def print_table(results: dict[str, Any]) -> None:
    print(f"\ntext: {len(TEXT)} chars, 4 sentences; first sentence: {len(FIRST_SENTENCE)} chars")
    header = f"{'engine':8} {'TTFA whole':>11} {'TTFA 1st':>9} {'ratio':>6} {'RTF whole':>9} {'RTF 1st':>8}"
    header += f" {'1 sess':>7} {'2 sess':>7} {'4 sess':>7} {'ping p50/max':>13}"
    print(header)
    print("-" * len(header))
    for engine, r in results["engines"].items():
        if "error" in r:
            print(f"{engine:8} unavailable: {r['error']}")
            continue
        rates = {t["sessions"]: t["audio_s_per_s"] for t in r["throughput"]}
        ping = r["ping_during_synthesis"]
        print(
            f"{engine:8} {r['ttfa_whole_ms']:9.1f}ms {r['ttfa_first_sentence_ms']:7.1f}ms"
            f" {r['ttfa_ratio_whole_over_first']:6.2f} {r['rtf_whole']:9.2f} {r['rtf_first_sentence']:8.2f}"
            f" {rates[1]:7.2f} {rates[2]:7.2f} {rates[4]:7.2f}"
            f" {ping['median_ms']:6.1f}/{ping['max_ms']:.0f}ms"
        )
        refused = {t["sessions"]: t.get("refused", 0) for t in r["throughput"] if t.get("refused")}
        if refused:
            code = ErrorCode.OVERLOADED.value
            print(f"{'':8} sessions refused {code!r} (admission), by sessions opened: {refused}")
    print(
        "(sess columns: audio seconds per wall second of the sessions served; goal: ratio <= 1.10; seed on"
        " GPU: 329.3/156.7 = 2.10)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine", action="append", choices=("onnx", "torch"), help="default: onnx")
    parser.add_argument("--url", help="measure a running server (ws://host:port) instead of starting one")
    parser.add_argument("--threads", type=int, help="engine threads for servers this script starts")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.output == RESULTS:  # the committed figures: only from a quiet machine
        args.output = results_path(RESULTS)
    assert len(TEXT) == 267, len(TEXT)
    started = MachineAt.now()

    engines: dict[str, Any] = {}
    if args.url:
        http_url = args.url.replace("ws://", "http://").replace("wss://", "https://")
        engines["server"] = asyncio.run(measure(args.url, http_url, args.trials))
    for engine in args.engine or ([] if args.url else ["onnx"]):
        try:
            with model_server(engine, args.threads) as (ws_url, http_url):
                engines[engine] = asyncio.run(measure(ws_url, http_url, args.trials))
        except (RuntimeError, OSError) as exc:
            engines[engine] = {"error": str(exc)}
    results = {
        "text_chars": len(TEXT),
        "first_sentence_chars": len(FIRST_SENTENCE),
        "trials": args.trials,
        "seed_gpu_ms": SEED_GPU_MS,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "engines": engines,
    }
    save_results(args.output, results, started)
    print_table(results)
    print(f"load average before {results['load_before']}; the neighbours' load {results['neighbours_load']}")


if __name__ == "__main__":
    main()
