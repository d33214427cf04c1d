"""A voice mix's vocoder statistics: fitted like a voice's, or derived from its voices' fitted models?

Fits both voices and the mix, then renders held-out sentences with the mix three ways: each sentence's
own statistics (the reference, rendered whole), the fitted model's, and the derived model's
(:meth:`NormStatsModel.mixed`). Prints each one's distance from the reference (level, octave bands and
the share above 5 kHz, dB: :mod:`benchmarks.spectrum`) and writes
``benchmarks/results/voice_mix_stats-<mix>.json`` (audio quality, which load does not change)::

    uv run --all-extras python -m benchmarks.voice_mix_stats
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.machine import load_average, results_path
from benchmarks.spectrum import timbre_vs_whole
from strands_kokoro.protocol import parse_voice
from tts_container.engines.norm_stats import NormStatsModel, VoiceNormStats, shares
from tts_container.engines.onnx_engine import OnnxEngine
from tts_container.engines.windowed_engine import voice_calibration
from tts_container.engines.windows import HARMONICS
from tts_container.synthesis.utterance import plan_utterance

RESULTS = Path(__file__).parent / "results" / "voice_mix_stats.json"
HELD_OUT = (
    "The ferry left the harbour at dawn, carrying farmers and their goats across the river.",
    "Could you tell me whether the library is open on Sunday afternoons?",
    "She sells sea shells by the sea shore, and the shells she sells are surely seashells.",
    "Turn left at the second light, then keep going until you see the red barn.",
    "Our quarterly numbers look strong, although the spring months were slower than we hoped.",
    "Yes, absolutely.",
)


def level_db(audio: np.ndarray) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(np.square(audio, dtype=np.float64))) + 1e-9))


def fit(engine: OnnxEngine, stats: VoiceNormStats, voice: str) -> NormStatsModel:
    calibration = voice_calibration(engine, engine._phonemizer, stats, voice)
    if calibration is not None:
        for step in calibration.steps:
            step()
        calibration.finish()
    model = stats.get(voice)
    assert model is not None
    return model


def compare(engine: OnnxEngine, mix: str, models: dict[str, NormStatsModel]) -> list[dict[str, Any]]:
    rows = []
    zero = np.zeros(HARMONICS, dtype=np.float32)
    for text in HELD_OUT:
        for segment in plan_utterance(engine._phonemizer, text, voice=mix, lang="en-us"):
            prosody = engine.prosody(segment.phonemes.text, voice=mix, speed=1.0)
            whole, _ = engine.vocode(prosody, 0, prosody.steps, phase=zero, stats=None)
            silence, sibilance = shares(prosody.durations, segment.phonemes.text, engine.vocab)
            row: dict[str, Any] = {"text": text}
            for name, model in models.items():
                predicted = model.at(silence, prosody.steps, sibilance)
                audio, _ = engine.vocode(prosody, 0, prosody.steps, phase=zero, stats=predicted)
                bands, bright = timbre_vs_whole(audio, whole)
                row[name] = {
                    "level_db": round(abs(level_db(audio) - level_db(whole)), 2),
                    "bands_db": round(bands, 2),
                    "bright_db": round(abs(bright), 2),
                }
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mix", default="af_bella(2)+af_sky(1)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    load_before = load_average()
    mix = parse_voice(args.mix)
    with tempfile.TemporaryDirectory() as folder:
        engine = OnnxEngine.from_cache(threads=args.threads)
        stats = VoiceNormStats(Path(folder), engine._norms)
        parts = [(fit(engine, stats, name), share) for name, share in mix.parts]
        models = {"fitted": fit(engine, stats, mix.canonical), "derived": NormStatsModel.mixed(parts)}
        rows = compare(engine, mix.canonical, models)
    summary = {
        name: {
            measure: {
                "median": round(statistics.median(row[name][measure] for row in rows), 2),
                "worst": round(max(row[name][measure] for row in rows), 2),
            }
            for measure in ("level_db", "bands_db", "bright_db")
        }
        for name in models
    }
    print(f"mix {mix.canonical}: distance from each sentence rendered whole (median / worst, dB)")
    print(f"{'model':<10}{'level':>14}{'octave bands':>16}{'above 5 kHz':>16}")
    for name, measures in summary.items():
        cells = [f"{m['median']:.2f} / {m['worst']:.2f}" for m in measures.values()]
        print(f"{name:<10}{cells[0]:>14}{cells[1]:>16}{cells[2]:>16}")
    slug = "".join(c if c.isalnum() else "_" for c in args.mix).strip("_")
    out = results_path(RESULTS.with_name(f"voice_mix_stats-{slug}.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"mix": mix.canonical, "summary": summary, "rows": rows}
    result |= {"load_before": load_before, "load_after": load_average()}
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
