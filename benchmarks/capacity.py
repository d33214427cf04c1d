"""How many listeners one model server keeps speaking without a stutter, and what it says when full.

N listeners (default 1, 2, 3, 4, 6, 8, 12, 16) each open a session at the same moment, send a 4-sentence
answer as whole sentences and play what arrives in real time. Per N: first audio p50/p95, the worst
stall, stutterers (a stall over 250 ms), refusals and how fast, audio per wall second (architecture §7).
Then, same run, weights and voice: the engine's compute per audio second against kokoro-onnx's
``create()`` and ``create_stream()``.

    uv run --all-extras python -m benchmarks.capacity
    uv run --all-extras python -m benchmarks.capacity --listeners 1 2 3 4 --url ws://127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

from agentcore_app.local.stack import model_server
from benchmarks.machine import MachineAt, results_path, save_results
from strands_kokoro.protocol import (
    DEFAULT_VOICE,
    WS_PATH,
    Close,
    ErrorCode,
    ServerError,
    SynthesisCompleted,
    SynthesizeRequest,
    audio_ms,
    control_object,
    parse_control,
)

RESULTS = Path(__file__).parent / "results" / "capacity.json"
STUTTER_S = 0.25
DEFAULT_LISTENERS = (1, 2, 3, 4, 6, 8, 12, 16)
# Answers of four sentences each (~260-300 characters), one per listener in turn.
ANSWERS = (
    (
        "Streaming text to speech lets a voice agent start talking before it has finished thinking.",
        "Each sentence goes to the model the moment it is written.",
        "The listener hears the first words while the rest is still being generated.",
        "That is why the first one matters so much.",
    ),
    (
        "The train to the coast leaves every hour from platform four.",
        "Tickets are cheaper if you book them a day in advance.",
        "Bring a jacket, because the wind by the water is colder than you expect.",
        "The last train back leaves a little after ten in the evening.",
    ),
    (
        "Bread needs time more than it needs effort.",
        "Mix the flour, water, salt and yeast, then let the dough rest for an hour.",
        "Fold it a few times, shape it gently, and leave it to rise once more.",
        "Bake it hot until the crust sounds hollow when you knock on it.",
    ),
    (
        "Your meeting with the design team moved to Thursday afternoon.",
        "They want to review the new onboarding screens before the release.",
        "I have attached the latest mockups and the notes from last week.",
        "Let me know if you would like me to book a larger room.",
    ),
)


@dataclass
class Listener:
    """What one listener heard: when each piece of audio arrived, and how its player fared."""

    index: int
    refused: bool = False
    refused_after_s: float | None = None
    retry_after_ms: int | None = None
    first_audio_s: float | None = None
    audio_s: float = 0.0
    stalls_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def worst_stall_s(self) -> float:
        return max(self.stalls_s, default=0.0)


def play(arrivals: list[tuple[float, float]]) -> list[float]:
    """The stalls of a real-time player fed ``(arrival s, audio s)`` pieces, starting at the first: each
    piece that arrives after the audio before it has played out is a silence (the tests use it too)."""
    stalls: list[float] = []
    if not arrivals:
        return stalls
    dry_at = arrivals[0][0]
    for arrived, seconds in arrivals:
        if arrived > dry_at:
            stalls.append(arrived - dry_at)
            dry_at = arrived
        dry_at += seconds
    return stalls


async def listen(ws_url: str, index: int, start: asyncio.Event) -> Listener:
    """One listener: open a session, wait for the common start, send the answer, play what comes."""
    listener = Listener(index)
    answer = ANSWERS[index % len(ANSWERS)]
    arrivals: list[tuple[float, float]] = []
    rate = 24_000
    async with connect(ws_url + WS_PATH, max_size=None) as ws:
        await ws.recv()  # session_start
        await start.wait()
        began = time.perf_counter()
        for number, sentence in enumerate(answer):
            await ws.send(SynthesizeRequest(sentence, request_id=f"l{index}-s{number}").to_wire())
        completed = 0
        while completed < len(answer):
            payload = await ws.recv()
            now = time.perf_counter() - began
            control = control_object(payload)
            if control is None:
                assert isinstance(payload, bytes)
                seconds = audio_ms(len(payload), rate) / 1000
                if listener.first_audio_s is None:
                    listener.first_audio_s = now
                arrivals.append((now, seconds))
                listener.audio_s += seconds
                continue
            frame = parse_control(control)
            if isinstance(frame, SynthesisCompleted):
                completed += 1
            elif isinstance(frame, ServerError):
                if frame.code == ErrorCode.OVERLOADED and listener.first_audio_s is None:
                    listener.refused, listener.refused_after_s = True, now
                    listener.retry_after_ms = frame.retry_after_ms
                    break
                listener.errors.append(frame.code)
                completed += 1
        await ws.send(Close().to_wire())
    listener.stalls_s = play(arrivals)
    return listener


async def server_stats(http_url: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as client:
        stats: dict[str, Any] = (await client.get(http_url + "/stats")).json()
        return stats


async def round_of(ws_url: str, http_url: str, n: int) -> dict[str, Any]:
    """N listeners at once; the figures of that round."""
    before = await server_stats(http_url)
    start = asyncio.Event()
    tasks = [asyncio.create_task(listen(ws_url, index, start)) for index in range(n)]
    await asyncio.sleep(0.5)  # every session open and greeted before the common start
    began = time.perf_counter()
    start.set()
    listeners = await asyncio.gather(*tasks)
    wall_s = time.perf_counter() - began
    after = await server_stats(http_url)
    served = [listener for listener in listeners if not listener.refused]
    firsts = sorted(listener.first_audio_s for listener in served if listener.first_audio_s is not None)
    made_s = (after["audio_made_ms"] - before["audio_made_ms"]) / 1000
    return {
        "listeners": n,
        "served": len(served),
        "refused": n - len(served),
        "refused_within_s": max((x.refused_after_s or 0.0 for x in listeners if x.refused), default=None),
        "first_audio_p50_s": _quantile(firsts, 0.5),
        "first_audio_p95_s": _quantile(firsts, 0.95),
        "worst_stall_s": max((x.worst_stall_s for x in served), default=0.0),
        "most_stalled_total_s": max((sum(x.stalls_s) for x in served), default=0.0),
        "stuttering": sum(x.worst_stall_s > STUTTER_S for x in served),
        "audio_per_wall_s": round(made_s / wall_s, 3) if wall_s > 0 else None,
        "engine_s_per_audio_s": _engine_per_audio(before, after),
        "capacity_listeners_after": after.get("capacity_listeners"),
        "errors": sorted({code for x in listeners for code in x.errors}),
        "per_listener": [asdict(x) for x in listeners],
    }


def _engine_per_audio(before: dict[str, Any], after: dict[str, Any]) -> float | None:
    made_s = (after["audio_made_ms"] - before["audio_made_ms"]) / 1000
    busy_s = after.get("engine_busy_s", 0.0) - before.get("engine_busy_s", 0.0)
    return round(busy_s / made_s, 4) if made_s > 0 and busy_s > 0 else None


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def peer_compute() -> dict[str, Any]:
    """kokoro-onnx on the same int8 weights and voice: engine seconds per second of audio, both ways."""
    from kokoro_onnx import Kokoro

    from tts_container.weights.provisioning import ensure_weights

    weights = ensure_weights()
    kokoro = Kokoro(str(weights.onnx_model), str(weights.voices))  # its defaults: every core
    texts = [" ".join(answer) for answer in ANSWERS]
    kokoro.create(texts[0], voice=DEFAULT_VOICE)  # warm: graph optimisation, espeak load

    def create(text: str) -> tuple[float, float]:
        started = time.perf_counter()
        audio, rate = kokoro.create(text, voice=DEFAULT_VOICE)
        return time.perf_counter() - started, len(audio) / rate

    async def stream(text: str) -> tuple[float, float, float]:
        started = time.perf_counter()
        first, total = None, 0.0
        async for audio, rate in kokoro.create_stream(text, voice=DEFAULT_VOICE):
            first = time.perf_counter() - started if first is None else first
            total += len(audio) / rate
        return time.perf_counter() - started, total, first or 0.0

    whole = [create(text) for text in texts]
    streamed = [asyncio.run(stream(text)) for text in texts]
    return {
        "create_engine_s_per_audio_s": round(sum(e for e, _ in whole) / sum(a for _, a in whole), 4),
        "create_stream_engine_s_per_audio_s": round(
            sum(e for e, _, _ in streamed) / sum(a for _, a, _ in streamed), 4
        ),
        "create_stream_first_audio_s": round(statistics.median(f for _, _, f in streamed), 3),
    }


async def measure(
    ws_url: str,
    http_url: str,
    counts: list[int],
    *,
    stop_at: float | None = None,
    round_cap_s: float | None = None,
) -> list[dict[str, Any]]:
    """One round per N in ``counts``. With ``stop_at`` (``time.monotonic()``), no round starts after it
    and none runs past it; with ``round_cap_s``, none runs longer. A round stopped so is not a result:
    the rounds after it are skipped too (a larger N would take longer still)."""
    rounds = []
    for n in counts:
        cap = round_cap_s
        if stop_at is not None:
            left = stop_at - time.monotonic()
            cap = left if cap is None else min(cap, left)
        if cap is not None and cap <= 0:
            print(f"time budget spent: {n} listener(s) and more not measured", file=sys.stderr, flush=True)
            break
        print(f"{n} listener(s)...", file=sys.stderr, flush=True)
        try:
            async with asyncio.timeout(cap):
                rounds.append(await round_of(ws_url, http_url, n))
        except TimeoutError:
            print(f"{n} listener(s): stopped after {cap:.0f} s; larger N not measured", file=sys.stderr)
            break
        await asyncio.sleep(3.0)  # every answer's gap over: the next round starts from an idle server
    return rounds


def stall_free_capacity(rounds: list[dict[str, Any]]) -> int:
    return max((r["served"] for r in rounds if r["worst_stall_s"] <= STUTTER_S), default=0)


def shared_engine_s_per_audio_s(rounds: list[dict[str, Any]]) -> float | None:
    """The engine's compute per second of audio while it serves two listeners or more (an engine with
    two lanes then runs two calls side by side), the median over those rounds."""
    shared = [r["engine_s_per_audio_s"] for r in rounds if r["served"] >= 2 and r["engine_s_per_audio_s"]]
    return round(statistics.median(shared), 4) if shared else None


def print_table(result: dict[str, Any]) -> None:
    neighbours = result["neighbours_load"]
    print(f"load average before {result['load_before']}; the neighbours' load during the run {neighbours}")
    print(
        "| listeners | served | refused (within) | first audio p50 / p95 | worst stall | most-stalled total "
        "| stuttering | audio s per wall s | engine s per audio s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in result["rounds"]:
        refused = f"{r['refused']}" + (f" ({r['refused_within_s'] * 1000:.0f} ms)" if r["refused"] else "")
        p50, p95 = (
            f"{v * 1000:.0f}" if v is not None else "-"
            for v in (r["first_audio_p50_s"], r["first_audio_p95_s"])
        )
        print(
            f"| {r['listeners']} | {r['served']} | {refused} | {p50} / {p95} ms "
            f"| {r['worst_stall_s'] * 1000:.0f} ms "
            f"| {r['most_stalled_total_s'] * 1000:.0f} ms | {r['stuttering']} | {r['audio_per_wall_s']} "
            f"| {r['engine_s_per_audio_s']} |"
        )
    print(f"stall-free capacity: {result['stall_free_capacity']} listeners")
    if (peer := result.get("peer")) is not None:
        ours = result["rounds"][0]["engine_s_per_audio_s"]
        shared = result["shared_engine_s_per_audio_s"]
        print(
            f"engine s per audio s: ours {ours} (N=1), {shared} (median of the rounds serving two or more), "
            f"kokoro-onnx create() {peer['create_engine_s_per_audio_s']}, "
            f"create_stream() {peer['create_stream_engine_s_per_audio_s']} "
            f"(its first audio {peer['create_stream_first_audio_s'] * 1000:.0f} ms)"
        )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.url:
        http_url = args.url.replace("ws://", "http://", 1)
        return {"rounds": await measure(args.url, http_url, args.listeners)}
    async with model_server(threads=args.threads) as server:
        return {"rounds": await measure(server.ws_url, server.http_url, args.listeners)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listeners", type=int, nargs="+", default=list(DEFAULT_LISTENERS))
    parser.add_argument("--url", help="a running server's ws:// address (default: start one)")
    parser.add_argument("--threads", type=int, default=None, help="engine threads (default: the server's)")
    parser.add_argument("--no-peer", action="store_true", help="skip the kokoro-onnx comparison")
    args = parser.parse_args(argv)
    out = results_path(RESULTS)
    started = MachineAt.now()
    result = asyncio.run(run(args))
    if not args.no_peer:
        result["peer"] = peer_compute()
    result.update(
        stall_free_capacity=stall_free_capacity(result["rounds"]),
        shared_engine_s_per_audio_s=shared_engine_s_per_audio_s(result["rounds"]),
    )
    save_results(out, result, started)
    print_table(result)


if __name__ == "__main__":
    main()
