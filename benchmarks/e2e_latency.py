"""End-to-end latency: how much sooner a listener hears the agent in bidi mode than in batch mode.

Everything runs for real on this machine: the embedded LLM (or ``--model``), the agent app over HTTP,
the Kokoro model server over its WebSocket. For each of 5 fixed prompts (3-6 sentence answers), N trials
per variant, alternating (batch, bidi, bidi without the clause-shortened first chunk), the client
measures (DESIGN §7):

- TTFA: request sent -> first audio byte at the client; ratio TTFA(batch) / TTFA(bidi);
- the bidi floor: LLM time to the first chunk's last character (when that text_delta reached the client)
  + the engine's time to first audio for that chunk alone, synthesized on a warm session in the same run;
  the gap is TTFA(bidi) - floor (what our plumbing adds);
- stall: a real-time player starts at the first audio byte; every moment it has nothing to play before
  the last byte is stall;
- bidi with and without the clause-shortened first chunk (``first_chunk_words=None``).

Usage: ``uv run --all-extras python benchmarks/e2e_latency.py --trials 3`` (prints a table, writes JSON
to benchmarks/results/). Ratios are from one run on one machine; absolute numbers only mean something on
the hardware they were taken on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.client import TimedEvent, TurnRecord, run_turn
from agentcore_app.local_stack import agent_app, model_server, provision_weights, tts_threads, warm_up_model
from agentcore_app.report import stall_ms
from strands_kokoro.sessions import AudioData, SpeechRequest, SynthesisCompleted, open_session

PROMPTS: tuple[str, ...] = (
    "In four sentences, explain why the sky is blue.",
    "Describe a good morning routine in four short sentences.",
    "In three sentences, tell me what a volcano is.",
    "Give me five sentences about how bees make honey.",
    "In four sentences, explain how a bicycle stays upright.",
)
VARIANTS: tuple[str, ...] = ("batch", "bidi", "bidi_whole_first_sentence")
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def first_chunk(record: TurnRecord) -> tuple[str, float] | None:
    """The first spoken chunk's text and when the text_delta holding its last character arrived."""
    sentences = record.of_type("sentence_complete")
    if not sentences:
        return None
    chunk_text = str(sentences[0].event["text"]).strip()
    tail = chunk_text[-12:]
    written = ""
    for delta in record.of_type("text_delta"):
        written += delta.event["text"]
        if tail and tail in written:
            return chunk_text, delta.at_ms
    return chunk_text, record.of_type("text_delta")[-1].at_ms


async def engine_first_audio_ms(speech_endpoint: str, text: str, voice: str | None) -> float:
    """Time to first audio for ``text`` alone on an already open session (bidi keeps its session open)."""
    first: float | None = None
    async with open_session(speech_endpoint) as session:
        events = aiter(session.events())  # one iterator: the frame decoder's state spans both requests
        await session.send(SpeechRequest(request_id="warm", text="Hi.", voice=voice))
        async for event in events:
            if isinstance(event, SynthesisCompleted):
                break
        started = time.perf_counter()
        await session.send(SpeechRequest(request_id="floor", text=text, voice=voice))
        async for event in events:
            if isinstance(event, AudioData) and first is None:
                first = (time.perf_counter() - started) * 1000.0
            if isinstance(event, SynthesisCompleted):
                break
        await session.close()
    if first is None:
        raise RuntimeError("the model server sent no audio for the floor measurement")
    return first


def ttfa(record: TurnRecord) -> float | None:
    first: TimedEvent | None = record.first("audio_chunk")
    return None if first is None else first.at_ms


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


async def run(args: argparse.Namespace) -> dict[str, Any]:
    await asyncio.to_thread(provision_weights)
    trials: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            model_server(
                Path(tmp) / "model_server.log", threads=args.tts_threads or tts_threads(args.model)
            ) as server_url,
            httpx.AsyncClient(timeout=300) as http,
        ):
            speech = server_url.replace("http://", "ws://", 1)
            await warm_up_model(args.model)
            async with (
                agent_app(speech, args.model) as app_url,
                agent_app(speech, args.model, {"first_chunk_words": None}) as whole_sentence_app_url,
            ):
                urls = {
                    "batch": app_url,
                    "bidi": app_url,
                    "bidi_whole_first_sentence": whole_sentence_app_url,
                }
                for p_index, prompt in enumerate(PROMPTS[: args.prompts]):
                    await warm_up_model(args.model, prompt)  # same prompt cache state for every variant
                    for trial in range(args.trials):
                        order = VARIANTS if trial % 2 == 0 else tuple(reversed(VARIANTS))
                        for variant in order:
                            mode = "batch" if variant == "batch" else "bidi"
                            record = await run_turn(urls[variant], prompt, mode, http_client=http)
                            row: dict[str, Any] = {
                                "prompt": p_index,
                                "trial": trial,
                                "variant": variant,
                                "ttfa_ms": ttfa(record),
                                "stall_ms": round(stall_ms(record), 1),
                                "audio_s": round(record.audio_s, 2),
                                "total_ms": record.summary()["total_ms"],
                                "errors": record.summary()["errors"],
                            }
                            if variant == "bidi" and (chunk := first_chunk(record)) is not None:
                                text, llm_ms = chunk
                                engine_ms = await engine_first_audio_ms(speech, text, None)
                                row |= {
                                    "first_chunk": text,
                                    "llm_first_chunk_ms": round(llm_ms, 1),
                                    "engine_first_chunk_ms": round(engine_ms, 1),
                                    "floor_ms": round(llm_ms + engine_ms, 1),
                                }
                            trials.append(row)
                            # Written after every turn: a long run stopped early still leaves its numbers.
                            write_result(summarize(trials, args), args.out)
                            print(
                                f"prompt {p_index} trial {trial} {variant:>26}: TTFA {row['ttfa_ms']} ms, "
                                f"stall {row['stall_ms']} ms",
                                file=sys.stderr,
                            )
    return summarize(trials, args)


def summarize(trials: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    def stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
        by = {v: [r for r in rows if r["variant"] == v] for v in VARIANTS}
        med = {v: _median([r["ttfa_ms"] for r in by[v] if r["ttfa_ms"] is not None]) for v in VARIANTS}
        bidi = by["bidi"]
        gaps = [r["ttfa_ms"] - r["floor_ms"] for r in bidi if "floor_ms" in r and r["ttfa_ms"] is not None]
        ratio = med["batch"] / med["bidi"] if med["batch"] and med["bidi"] else None
        whole = med["bidi_whole_first_sentence"]
        return {
            "ttfa_median_ms": med,
            "ratio_batch_over_bidi": None if ratio is None else round(ratio, 2),
            "floor_median_ms": _median([r["floor_ms"] for r in bidi if "floor_ms" in r]),
            "floor_gap_median_ms": _median(gaps),
            "shortened_first_chunk_gain": None
            if not whole or not med["bidi"]
            else round(1.0 - med["bidi"] / whole, 3),
            "stall_median_ms": {v: _median([r["stall_ms"] for r in by[v]]) for v in VARIANTS},
            "stall_max_ms": {v: max((r["stall_ms"] for r in by[v]), default=None) for v in VARIANTS},
        }

    prompts = sorted({r["prompt"] for r in trials})
    return {
        "benchmark": "e2e_latency",
        "model": args.model,
        "trials_per_variant": args.trials,
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "prompts": [PROMPTS[i] for i in prompts],
        "per_prompt": {str(i): stats([r for r in trials if r["prompt"] == i]) for i in prompts},
        "overall": stats(trials),
        "trials": trials,
    }


def print_table(result: dict[str, Any]) -> None:
    head = (
        f"{'prompt':<8}{'batch':>10}{'bidi':>10}{'bidi whole':>12}{'ratio':>8}{'floor':>9}{'gap':>8}"
        f"{'1st-chunk gain':>16}{'stall bidi':>12}{'stall batch':>12}"
    )
    print(head)
    print("-" * len(head))
    rows = [*result["per_prompt"].items(), ("overall", result["overall"])]
    for name, s in rows:
        med = s["ttfa_median_ms"]
        gain = s["shortened_first_chunk_gain"]

        def ms(v: float | None) -> str:
            return "-" if v is None else f"{v:,.0f}"

        print(
            f"{name:<8}{ms(med['batch']):>10}{ms(med['bidi']):>10}{ms(med['bidi_whole_first_sentence']):>12}"
            f"{(str(s['ratio_batch_over_bidi']) + '×') if s['ratio_batch_over_bidi'] else '-':>8}"
            f"{ms(s['floor_median_ms']):>9}{ms(s['floor_gap_median_ms']):>8}"
            f"{'-' if gain is None else f'{gain:.0%}':>16}"
            f"{ms(s['stall_median_ms']['bidi']):>12}{ms(s['stall_median_ms']['batch']):>12}"
        )
    print("(median ms; ratio = TTFA batch / TTFA bidi; gap = TTFA bidi - floor; gain = 1 - bidi/bidi whole)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3, help="trials per prompt and variant")
    parser.add_argument("--prompts", type=int, default=len(PROMPTS), help="use the first N prompts")
    parser.add_argument("--model", default="local", help="local | bedrock:<id> | openai:<url>[#model]")
    parser.add_argument("--tts-threads", type=int, default=None, help="model server engine threads")
    parser.add_argument("--out", type=Path, default=None, help="JSON path (default benchmarks/results/...)")
    args = parser.parse_args(argv)
    args.out = args.out or RESULTS_DIR / f"e2e_latency-{time.strftime('%Y%m%d-%H%M%S')}.json"
    result = asyncio.run(run(args))
    print_table(result)
    write_result(result, args.out)
    print(f"wrote {args.out}")


def write_result(result: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
