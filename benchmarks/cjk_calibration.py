"""Japanese and Mandarin voices streamed in windows: statistics fitted on English or on their language.

A CPU engine renders a long segment window by window with the voice's predicted vocoder statistics
(:mod:`tts_container.engines.norm_stats`). This fits each voice twice, on the English calibration text
and on the text in its own language (what the server does), renders held-out sentences in windows with
each, and compares them with the same sentences rendered whole: the level step (dB), the octave-band
tilt and the step of the energy above 5 kHz (:mod:`benchmarks.spectrum`). Writes
``benchmarks/results/cjk_calibration.json`` with the load average (quality figures, not timings)::

    uv run --all-extras python -m benchmarks.cjk_calibration
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.machine import load_average, results_path
from benchmarks.spectrum import timbre_vs_whole
from tts_container.engines.norm_stats import CALIBRATION_TEXT, NormStatsModel, calibration_for
from tts_container.engines.onnx_engine import OnnxEngine
from tts_container.engines.windowed_engine import whole_sample
from tts_container.engines.windows import render
from tts_container.synthesis.utterance import plan_utterance

RESULTS = Path(__file__).parent / "results" / "cjk_calibration.json"
HELD_OUT = {
    "ja": [
        "昨日の夕方、駅の近くの小さな喫茶店で、古い友達と三時間も話し込んでしまいました。",
        "この町では、春になると川沿いの桜が一斉に咲いて、たくさんの観光客が写真を撮りに来ます。",
        "新しいソフトウェアを使う前に、必ず説明書を読んで、設定を確認してください。",
        "静かな森の中を歩いていると、遠くから鳥の声と水の流れる音が聞こえてきました。",
    ],
    "zh": [
        "昨天傍晚，我在车站附近的一家小咖啡馆里，和一位老朋友聊了整整三个小时。",
        "每到春天，这座城市河边的樱花就会一起开放，吸引很多游客前来拍照。",
        "在使用新的软件之前，请一定先阅读说明书，并且仔细检查所有的设置。",
        "走在安静的森林里，可以听到远处传来的鸟叫声和流水的声音。",
    ],
}


def fit(engine: OnnxEngine, voice: str, text: str, lang: str) -> NormStatsModel:
    """The voice's statistics model fitted on ``text`` read in ``lang``, each sentence rendered whole."""
    samples = []
    for segment in plan_utterance(engine._phonemizer, text, voice=voice, lang=lang):
        sample = whole_sample(engine, segment, voice=voice)
        if sample is not None:
            samples.append(sample)
    return NormStatsModel.fit(samples)


def level_db(audio: np.ndarray) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(np.square(audio, dtype=np.float64))) + 1e-9))


def compare(engine: OnnxEngine, voice: str, lang: str, model: NormStatsModel) -> list[dict[str, float]]:
    rows = []
    for sentence in HELD_OUT[lang]:
        for segment in plan_utterance(engine._phonemizer, sentence, voice=voice, lang=lang):
            (whole,) = render(engine, segment, voice=voice, speed=1.0, stats_model=None, growth=None)
            pieces = list(render(engine, segment, voice=voice, speed=1.0, stats_model=model, growth=1.5))
            streamed = np.concatenate([piece.audio for piece in pieces])
            bands, bright = timbre_vs_whole(streamed, whole.audio)
            level = level_db(streamed) - level_db(whole.audio)
            rows.append({"windows": len(pieces), "level_db": level, "bands_db": bands, "bright_db": bright})
    return rows


def summary(rows: list[dict[str, float]]) -> dict[str, float]:
    levels = [abs(r["level_db"]) for r in rows]
    brights = [abs(r["bright_db"]) for r in rows]
    bands = [r["bands_db"] for r in rows]
    return {
        "level_median_db": statistics.median(levels),
        "level_worst_db": max(levels),
        "bands_median_db": statistics.median(bands),
        "bright_median_db": statistics.median(brights),
        "bright_worst_db": max(brights),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--voices", default="jf_alpha,jm_kumo,zf_xiaobei,zm_yunxi")
    args = parser.parse_args()
    load = load_average()
    engine = OnnxEngine.from_cache(threads=2)
    results: dict[str, Any] = {"load_average": load, "voices": {}}
    print(f"{'voice':12s} {'fitted on':9s} {'level dB':>16s} {'bands dB':>9s} {'>5 kHz dB':>16s}")
    for voice in args.voices.split(","):
        text, lang = calibration_for(voice)
        per_fit: dict[str, Any] = {}
        fits = {"english": (CALIBRATION_TEXT, "en-us"), lang: (text, lang)}
        for name, (fit_text, fit_lang) in fits.items():
            rows = compare(engine, voice, lang, fit(engine, voice, fit_text, fit_lang))
            s = summary(rows)
            per_fit[name] = {"summary": s, "segments": rows}
            print(
                f"{voice:12s} {name:9s} {s['level_median_db']:7.2f} / {s['level_worst_db']:5.2f}  "
                f"{s['bands_median_db']:9.2f} {s['bright_median_db']:7.2f} / {s['bright_worst_db']:5.2f}",
                flush=True,
            )
        results["voices"][voice] = per_fit
    path = results_path(RESULTS)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
