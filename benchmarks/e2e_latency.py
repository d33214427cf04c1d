"""End-to-end latency: how much sooner, and how evenly, a listener hears the agent in bidi than in batch.

The embedded LLM (or ``--model``), the agent app over HTTP and the model server over its WebSocket, all
real; 5 fixed prompts, N trials per mode in alternating order. Per turn (architecture §7): TTFA and the
batch/bidi ratio, stall, the bidi floor and the gap to it, each request's size and the pacer's predicted
against actual buffer; then Whisper WER of each bidi answer. The model server gets every core, the LLM
runs at nice +10 (``--tts-threads``, ``--llm-nice`` try others); each turn waits for the 1-minute load
to drop under 1.0 and records it.

Usage: ``uv run --all-extras python -m benchmarks.e2e_latency`` (prints a table, writes JSON to
benchmarks/results/).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from agentcore_app.agent.local_llm import LLM_NICE_ENV
from agentcore_app.local.client import run_turn
from agentcore_app.local.playback import stall_ms
from agentcore_app.local.stack import agent_app, model_server, provision_weights, warm_up_model, warm_up_turns
from agentcore_app.local.turn_record import TimedEvent, TurnRecord
from benchmarks.engine_floor import engine_first_audio_ms
from benchmarks.machine import results_path
from strands_kokoro.text.speech_text import clean_for_speech

PROMPTS: tuple[str, ...] = (
    "In four sentences, explain why the sky is blue.",
    "Describe a good morning routine in four short sentences.",
    "In three sentences, tell me what a volcano is.",
    "Give me five sentences about how bees make honey.",
    "In four sentences, explain how a bicycle stays upright.",
)
VARIANTS: tuple[str, ...] = ("batch", "bidi")
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def first_request(record: TurnRecord) -> tuple[str, float] | None:
    """The first request's text and when the text_delta holding its last character arrived."""
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


def ttfa(record: TurnRecord) -> float | None:
    first: TimedEvent | None = record.first("audio_chunk")
    return None if first is None else first.at_ms


def requests_of(record: TurnRecord) -> list[dict[str, Any]]:
    """Each request as the pacer cut it: size, and predicted vs actual buffer when its audio came."""
    return [
        {
            "text": e.event["text"],
            "chars": len(e.event["text"]),
            "words": len(e.event["text"].split()),
            "audio_ms": e.event["audio_ms"],
            "predicted_buffer_ms": e.event.get("predicted_buffer_ms"),
            "buffer_ms": e.event.get("buffer_ms"),
        }
        for e in record.of_type("sentence_complete")
    ]


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def _load() -> float:
    return round(os.getloadavg()[0], 2)


QUIET_LOAD = 1.0  # architecture §7: on a 2-core machine, a turn started above this is not a measurement
QUIET_WAIT_S = 180  # seconds


async def quiet_machine() -> float:
    """Wait (bounded) until the 1-minute load is back to quiet, and return it.

    The benchmark's own LLM and model server keep two cores busy during a turn, so without a pause the
    next turn would start on a machine loaded by the last one (about 35 s to settle after a burst).
    """
    for _ in range(QUIET_WAIT_S):  # the load average is polled: nothing can announce that it fell
        if (load := _load()) <= QUIET_LOAD:
            return load
        await asyncio.sleep(1.0)
    return _load()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    args.load_at_start = await quiet_machine()  # the one that says whether the machine was quiet
    await provision_weights()
    trials: list[dict[str, Any]] = []
    audio: list[tuple[dict[str, Any], bytes, int, str]] = []  # bidi trials to transcribe afterwards
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            model_server(Path(tmp) / "model_server.log", threads=args.tts_threads) as server,
            httpx.AsyncClient(timeout=300) as http,
        ):
            speech = server.ws_url
            await warm_up_model(args.model)
            async with agent_app(speech, args.model) as app_url:
                urls = {"batch": app_url, "bidi": app_url}
                await warm_up_turns(app_url)
                for p_index, prompt in enumerate(PROMPTS[: args.prompts]):
                    await warm_up_model(args.model, prompt)  # same prompt cache state for every variant
                    for trial in range(args.trials):
                        order = args.variants if trial % 2 == 0 else tuple(reversed(args.variants))
                        for variant in order:
                            load_before = await quiet_machine()
                            mode = "batch" if variant == "batch" else "bidi"
                            record = await run_turn(urls[variant], prompt, mode, http_client=http)
                            summary = record.summary()
                            row: dict[str, Any] = {
                                "prompt": p_index,
                                "trial": trial,
                                "variant": variant,
                                "ttfa_ms": ttfa(record),
                                "stall_ms": round(stall_ms(record), 1),
                                "audio_s": round(record.audio_s, 2),
                                "total_ms": summary["total_ms"],
                                "requests": summary["requests"],
                                "rtf": summary["rtf"],
                                "request_sizes": requests_of(record),
                                "errors": summary["errors"],
                                "load_before": load_before,
                                "load_after": _load(),
                            }
                            if variant == "bidi" and (chunk := first_request(record)) is not None:
                                text, llm_ms = chunk
                                engine_ms = await engine_first_audio_ms(speech, text)
                                row |= {
                                    "first_request": text,
                                    "llm_first_request_ms": round(llm_ms, 1),
                                    "engine_first_request_ms": round(engine_ms, 1),
                                    "floor_ms": round(llm_ms + engine_ms, 1),
                                }
                            if variant != "batch" and record.pcm:
                                audio.append((row, bytes(record.pcm), record.sample_rate, record.text))
                            trials.append(row)
                            # Written after every turn: a long run stopped early still leaves its numbers.
                            write_result(summarize(trials, args), args.out)
                            print(
                                f"prompt {p_index} trial {trial} {variant:>7}: TTFA {row['ttfa_ms']} ms, "
                                f"stall {row['stall_ms']} ms, {row['requests']} requests, "
                                f"load {load_before}",
                                file=sys.stderr,
                            )
    if not args.no_whisper:
        await asyncio.to_thread(score_with_whisper, audio)
    return summarize(trials, args)


def score_with_whisper(audio: list[tuple[dict[str, Any], bytes, int, str]]) -> None:
    """After the timed runs (Whisper would steal their CPU): WER of each answer's audio vs its text."""
    from benchmarks.speech_check import transcribe, word_error_rate

    for row, pcm, sample_rate, text in audio:
        heard = transcribe(pcm, sample_rate)
        row["wer"] = round(word_error_rate(clean_for_speech(text), heard), 3)
        row["heard"] = heard
        print(
            f"prompt {row['prompt']} trial {row['trial']} {row['variant']}: WER {row['wer']}", file=sys.stderr
        )


def summarize(trials: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    def stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
        by = {v: [r for r in rows if r["variant"] == v] for v in args.variants}
        med = {v: _median([r["ttfa_ms"] for r in by[v] if r["ttfa_ms"] is not None]) for v in by}
        bidi = by.get("bidi", [])
        gaps = [r["ttfa_ms"] - r["floor_ms"] for r in bidi if "floor_ms" in r and r["ttfa_ms"] is not None]
        batch_ms, bidi_ms = med.get("batch"), med.get("bidi")
        ratio = batch_ms / bidi_ms if batch_ms and bidi_ms else None
        errors = [(p["predicted_buffer_ms"] - p["buffer_ms"]) for r in bidi for p in r["request_sizes"]
                  if p["predicted_buffer_ms"] is not None and p["buffer_ms"] is not None]  # fmt: skip
        return {
            "ttfa_median_ms": med,
            "ratio_batch_over_bidi": round(ratio, 2) if ratio else None,
            "floor_median_ms": _median([r["floor_ms"] for r in bidi if "floor_ms" in r]),
            "floor_gap_median_ms": _median(gaps),
            "stall_median_ms": {v: _median([r["stall_ms"] for r in by[v]]) for v in by},
            "stall_max_ms": {v: max((r["stall_ms"] for r in by[v]), default=None) for v in by},
            "requests_median": {v: _median([r["requests"] for r in by[v] if r["requests"]]) for v in by},
            "rtf_median": _median([r["rtf"] for r in bidi if r["rtf"] is not None]),
            "buffer_prediction_error_median_ms": _median(errors),
            "wer_max": {v: max((r["wer"] for r in by[v] if "wer" in r), default=None) for v in by},
        }

    prompts = sorted({r["prompt"] for r in trials})
    loads = [r["load_before"] for r in trials]
    return {
        "benchmark": "e2e_latency",
        "model": args.model,
        "trials_per_variant": args.trials,
        "variants": list(args.variants),
        "tts_threads": args.tts_threads,
        "llm_nice": os.environ.get(LLM_NICE_ENV, "default (10)"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_at_start": getattr(args, "load_at_start", None),
            "load_before_max": max(loads, default=None),
        },
        "prompts": [PROMPTS[i] for i in prompts],
        "per_prompt": {str(i): stats([r for r in trials if r["prompt"] == i]) for i in prompts},
        "overall": stats(trials),
        "trials": trials,
    }


def print_table(result: dict[str, Any]) -> None:
    variants = result["variants"]
    head = f"{'prompt':<8}" + "".join(f"{'TTFA ' + v:>14}" for v in variants)
    head += f"{'ratio':>8}{'floor':>8}{'gap':>7}" + "".join(f"{'stall ' + v:>14}" for v in variants)
    head += f"{'requests':>10}{'RTF':>6}{'WER':>7}"
    print(head)
    print("-" * len(head))

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:,.0f}"

    for name, s in [*result["per_prompt"].items(), ("overall", result["overall"])]:
        ratio = s["ratio_batch_over_bidi"]
        wer = s["wer_max"].get("bidi")
        print(
            f"{name:<8}"
            + "".join(f"{ms(s['ttfa_median_ms'][v]):>14}" for v in variants)
            + f"{(f'{ratio}×' if ratio else '-'):>8}"
            + f"{ms(s['floor_median_ms']):>8}{ms(s['floor_gap_median_ms']):>7}"
            + "".join(f"{ms(s['stall_median_ms'][v]):>14}" for v in variants)
            + f"{ms(s['requests_median'].get('bidi')):>10}"
            + f"{'-' if s['rtf_median'] is None else s['rtf_median']:>6}"
            + f"{'-' if wer is None else wer:>7}"
        )
    overall = result["overall"]
    print(
        "(median ms; ratio = TTFA batch / TTFA bidi; gap = TTFA bidi - floor; WER: worst bidi answer)\n"
        f"worst stall: {overall['stall_max_ms']}; load average at start {result['machine']['load_at_start']}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3, help="trials per prompt and variant")
    parser.add_argument("--prompts", type=int, default=len(PROMPTS), help="use the first N prompts")
    parser.add_argument(
        "--variants", nargs="+", choices=VARIANTS, default=["batch", "bidi"], help="what to compare"
    )
    parser.add_argument("--model", default="local", help="local | bedrock:<id> | openai:<url>[#model]")
    parser.add_argument("--tts-threads", type=int, default=None, help="model server engine threads (all)")
    parser.add_argument("--llm-nice", type=int, default=None, help="the embedded LLM's nice value (10)")
    parser.add_argument("--no-whisper", action="store_true", help="skip the Whisper round trip")
    parser.add_argument(
        "--out", type=Path, default=None, help="JSON path (default benchmarks/results/e2e_latency.json)"
    )
    args = parser.parse_args(argv)
    args.variants = tuple(args.variants)
    if args.llm_nice is not None:
        os.environ[LLM_NICE_ENV] = str(args.llm_nice)  # read when the LLM loads, in this process
    # benchmarks/results/e2e_latency.json, or noisy/ beside it when the machine is busy as it starts.
    args.out = args.out or results_path(RESULTS_DIR / "e2e_latency.json")
    result = asyncio.run(run(args))
    print_table(result)
    write_result(result, args.out)
    print(f"wrote {args.out}")


def write_result(result: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
