"""The most audio the engine makes on this machine, whatever the arrangement of its calls.

Capacity cannot exceed what the engine makes when nothing waits. This renders the capacity benchmark's
16 sentences in-process four ways, rounds alternating: in windows or whole, one call at a time on every
core or two side by side (the pool's lanes); an engine with one lane that renders whole is measured the
one way it runs, and the onnx engine with each vocoder variant it loaded (and the fused static vocoder
unfused). Per arrangement: audio seconds per wall second, each round.

    uv run --all-extras python -m benchmarks.engine_ceiling
    uv run --all-extras python -m benchmarks.engine_ceiling --rounds 5 --engine torch
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.capacity import ANSWERS
from benchmarks.machine import MachineAt, results_path, save_results
from strands_kokoro.protocol import DEFAULT_LANG, DEFAULT_VOICE
from tts_container.engines.base import NATIVE_SAMPLE_RATE, Engine, Segment, call_lanes
from tts_container.engines.loader import ENGINE_NAMES, load_engine, resolve_engine_name
from tts_container.engines.onnx_engine import FUSED, OnnxEngine
from tts_container.engines.static_int8 import STATIC_DIR
from tts_container.engines.windowed_engine import WindowedEngine
from tts_container.weights.provisioning import ensure_weights

RESULTS = Path(__file__).parent / "results" / "engine_ceiling.json"
SENTENCES = tuple(sentence for answer in ANSWERS for sentence in answer)


def samples_of(engine: WindowedEngine, sentences: Sequence[str], lanes: int) -> int:
    """Render ``sentences`` one after another on a worker told it shares the engine with ``lanes``
    calls; the samples made."""
    token = call_lanes.set(lanes)
    try:
        return sum(
            len(piece.audio if isinstance(piece, Segment) else piece)
            for sentence in sentences
            for piece in engine.segments(sentence, voice=DEFAULT_VOICE, speed=1.0, lang=DEFAULT_LANG)
        )
    finally:
        call_lanes.reset(token)


def audio_per_wall_s(engine: WindowedEngine, lanes: int) -> float:
    """Audio seconds per wall second for all the sentences, split between ``lanes`` workers."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=lanes) as workers:
        made = sum(workers.map(lambda lane: samples_of(engine, SENTENCES[lane::lanes], lanes), range(lanes)))
    return made / NATIVE_SAMPLE_RATE / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engine", choices=ENGINE_NAMES, default="auto", help="as the server's --engine")
    parser.add_argument("--threads", type=int, default=None, help="engine threads (default: every core)")
    args = parser.parse_args(argv)
    out = results_path(RESULTS)
    started = MachineAt.now()
    if resolve_engine_name(args.engine) == "onnx":  # every vocoder variant kept, to measure each
        onnx_engine = OnnxEngine.from_cache(threads=args.threads)
        if FUSED in onnx_engine.variants:  # the static vocoder unfused too: what the operator gives
            weights = ensure_weights(part="onnx")
            onnx_engine.add_static_variant(weights.derived_dir(STATIC_DIR, weights.onnx_model))
        onnx_engine.warm_up(keep_variants=True)
        engine: Engine = onnx_engine
    else:
        engine = load_engine(args.engine, threads=args.threads)
    if not isinstance(engine, WindowedEngine):
        raise SystemExit(f"{type(engine).__name__} is not an engine this benchmark knows")
    ways = [("windows", engine.growth)] if engine.growth is not None else []
    variants: tuple[str | None, ...] = tuple(getattr(engine, "variants", ())) or (None,)
    arrangements = [
        (f"{variant + ', ' if variant else ''}{how}, {lanes} call(s) at once", variant, growth, lanes)
        for variant in variants
        for how, growth in (*ways, ("whole", None))
        for lanes in sorted({1, engine.lanes})
    ]
    rates: dict[str, list[float]] = {name: [] for name, _, _, _ in arrangements}
    for _ in range(args.rounds):
        for name, variant, growth, lanes in arrangements:
            if variant is not None and isinstance(engine, OnnxEngine) and variant != engine.variant:
                engine.use_variant(variant)
                if (calibration := engine.calibration(DEFAULT_VOICE)) is not None:
                    for step in calibration.steps:  # this variant's own voice statistics, once
                        step()
                    calibration.finish()
            engine.growth = growth
            rates[name].append(round(audio_per_wall_s(engine, lanes), 3))
            print(f"{name}: {rates[name][-1]} audio s per wall s", flush=True)
    print("| arrangement | audio s per wall s, each round |")
    print("|---|---|")
    for name, made in rates.items():
        print(f"| {name} | {', '.join(f'{rate:.2f}' for rate in made)} |")
    measured = {"engine": engine.name, "audio_per_wall_s": rates, "sentences": len(SENTENCES)}
    save_results(out, measured, started)


if __name__ == "__main__":
    main()
