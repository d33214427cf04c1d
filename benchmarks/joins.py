"""Joins a listener should not hear: the same sentences spoken whole, and cut as a client would cut them.

Each held-out sentence through the model server's engine and joiner (int8 ONNX, 24 kHz): ``whole`` (one
call: the reference), ``streamed`` (window by window), ``cut`` (4-5 word pieces, no context),
``cut+context`` (with :data:`~strands_kokoro.pacing.cut_points.MIN_LOOKAHEAD_WORDS` words of lookahead),
``cut+1 word`` and ``cut+5 words``. Per cut (server word timings): added silence (10 ms runs under
-40 dBFS), each word's duration, the pitch and level steps, against ``whole``; per window seam, silence
and level; per rendition, length, engine time, first audio, spectrum (octave bands, share above 5 kHz)
and level, also on :data:`SHORT_ANSWERS` streamed. Run alone on a quiet machine (architecture §7):

    uv run --all-extras python -m benchmarks.joins            # prints a table, writes JSON
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np

from benchmarks.join_measures import (
    Audio,
    Join,
    Rendition,
    level_db,
    measure_joins,
    seam_steps,
    share,
    summary,
)
from benchmarks.machine import results_path
from benchmarks.spectrum import BRIGHT_HZ, timbre_vs_whole
from strands_kokoro.pacing.cut_points import MIN_LOOKAHEAD_WORDS
from strands_kokoro.protocol import Word
from tts_container.engines.base import NATIVE_SAMPLE_RATE, NO_CONTEXT, Context, Segment
from tts_container.engines.onnx_engine import OnnxEngine
from tts_container.synthesis.stitching import SegmentJoiner

RESULTS = Path(__file__).parent / "results" / "joins.json"
SENTENCES = (
    "The old ferry carried farmers and their goats across the river every morning, long before the "
    "bridge was built.",
    "Most of the heat a house loses in winter escapes through the roof and the windows.",
    "A good night of sleep helps the brain sort out what it learned during the day.",
    "The museum opens at nine, but the best time to visit is late in the afternoon.",
    "Honey never spoils, because it holds so little water that bacteria cannot grow in it.",
    "My grandmother grew tomatoes, beans and sunflowers in a small garden behind her kitchen.",
    "Light from the sun takes about eight minutes to reach the surface of our planet.",
    "When the tide goes out, the children search the rocks for crabs and tiny fish.",
)
# Answers of a word or two, where the predicted statistics are least sure (mostly silence): their level
# streamed against rendered whole.
SHORT_ANSWERS = ("Bye!", "Yes.", "Sure, why not?", "Thanks a lot.", "Hello there, how are you today?")
PIECE_WORDS = (4, 5)  # the ``cut`` rendition's pieces: 4, 5, 4, 5 ... words
VOICES = ("af_heart", "am_michael")


def pieces_of(sentence: str) -> list[str]:
    words = sentence.split()
    out, at, k = [], 0, 0
    while at < len(words):
        n = PIECE_WORDS[k % 2]
        if len(words) - (at + n) < 3:  # no tail shorter than three words
            n = len(words) - at
        out.append(" ".join(words[at : at + n]))
        at, k = at + n, k + 1
    return out


def context_of(pieces: Sequence[str], index: int, lookahead: int) -> Context:
    """The words around piece ``index``: all of the sentence before it, ``lookahead`` words after."""
    previous = " ".join(pieces[:index]) or None
    following = " ".join(" ".join(pieces[index + 1 :]).split()[:lookahead]) or None
    return Context(previous, following)


def speak(
    engine: OnnxEngine, text: str, voice: str, *, context: Context = NO_CONTEXT, raw: bool = False
) -> Rendition:
    """One request through the engine (and the server's joiner unless ``raw``), timed call by call."""
    joiner = SegmentJoiner(NATIVE_SAMPLE_RATE)
    out: list[Audio] = []
    words: list[Word] = []
    seams: list[int] = []
    started = time.perf_counter()
    first: float | None = None
    iterator = iter(engine.segments(text, voice=voice, speed=1.0, lang="en-us", context=context))
    total = 0
    while True:
        try:
            piece: Segment = next(iterator)
        except StopIteration:
            break
        if first is None:
            first = time.perf_counter() - started
        if raw:
            seams.append(total)
            out.append(piece.audio)
            total += piece.audio.size
            words.extend(piece.words)
        else:
            pcm = joiner.segment(piece)
            out.append(np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32767.0)
            words.extend(joiner.words)
    engine_s = time.perf_counter() - started
    audio = np.concatenate(out) if out else np.zeros(0, dtype=np.float32)
    return Rendition(audio, words, first or engine_s, engine_s, seams[1:])


def joined(parts: Sequence[Rendition]) -> Rendition:
    """Requests played back to back, as a client plays them: audio concatenated, timings shifted."""
    audio, words, offset = [], [], 0.0
    for part in parts:
        audio.append(part.audio)
        words += [Word(w.text, w.start_ms + offset, w.end_ms + offset) for w in part.words]
        offset += part.audio.size / NATIVE_SAMPLE_RATE * 1000
    return Rendition(np.concatenate(audio), words, parts[0].first_audio_s, sum(p.engine_s for p in parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.json == RESULTS:  # the committed figures: only from a quiet machine
        args.json = results_path(RESULTS)
    load_before = os.getloadavg()
    engine = OnnxEngine.from_cache(threads=args.threads)
    engine.warm_up()
    for voice in VOICES:
        engine.warm_up(voice)  # each voice's vocoder statistics (fitted once, kept in the cache)
    growth = engine.growth
    lookaheads = {"cut+1 word": 1, "cut+context": MIN_LOOKAHEAD_WORDS, "cut+5 words": 5}
    results: dict[str, list[Join]] = {"cut": [], **{name: [] for name in lookaheads}}
    seams: list[dict[str, float]] = []
    lengths: dict[str, list[float]] = {"streamed": [], "cut": [], "cut+context": []}
    cost: dict[str, list[float]] = {"streamed": [], "cut": [], "cut+context": []}
    levels: dict[str, list[float]] = {"streamed": [], "cut": [], "cut+context": [], "short streamed": []}
    first: dict[str, list[float]] = {"whole": [], "streamed": [], "cut": [], "cut+context": []}
    timbre: dict[str, list[tuple[float, float]]] = {"streamed": [], "cut+context": []}
    for voice in VOICES:
        for index, sentence in enumerate(SENTENCES):
            engine.growth = None
            whole = speak(engine, sentence, voice)
            whole_raw = speak(engine, sentence, voice, raw=True)
            engine.growth = growth
            streamed_raw = speak(engine, sentence, voice, raw=True)
            streamed = speak(engine, sentence, voice)
            pieces = pieces_of(sentence)
            boundaries = list(np.cumsum([len(p.split()) for p in pieces])[:-1] - 1)
            plain = joined([speak(engine, p, voice) for p in pieces])
            results["cut"] += measure_joins(index, voice, plain, whole, boundaries)
            with_context = {
                name: joined(
                    [
                        speak(engine, piece, voice, context=context_of(pieces, k, lookahead))
                        for k, piece in enumerate(pieces)
                    ]
                )
                for name, lookahead in lookaheads.items()
            }
            for name, rendition in with_context.items():
                results[name] += measure_joins(index, voice, rendition, whole, boundaries)
            context = with_context["cut+context"]
            seams += seam_steps(streamed_raw, whole_raw)
            timbre["streamed"].append(timbre_vs_whole(streamed.audio, whole.audio))
            timbre["cut+context"].append(timbre_vs_whole(context.audio, whole.audio))
            for name, rendition in (("streamed", streamed), ("cut", plain), ("cut+context", context)):
                lengths[name].append(rendition.audio.size / whole.audio.size)
                cost[name].append(rendition.engine_s / whole.engine_s)
                levels[name].append(level_db(rendition.audio) - level_db(whole.audio))
            for name, rendition in (
                ("whole", whole),
                ("streamed", streamed),
                ("cut", plain),
                ("cut+context", context),
            ):
                first[name].append(rendition.first_audio_s * 1000)
        for answer in SHORT_ANSWERS:
            engine.growth = None
            whole = speak(engine, answer, voice)
            engine.growth = growth
            levels["short streamed"].append(
                level_db(speak(engine, answer, voice).audio) - level_db(whole.audio)
            )
    report = {
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "engine": "onnx int8",
        "threads": args.threads,
        "window_growth": growth,
        "sentences": len(SENTENCES),
        "voices": VOICES,
        "joins": {
            name: {
                "count": len(joins),
                "added_silence_ms": summary([j.added_silence_ms for j in joins]),
                "word_before_ratio": summary([j.before_ratio for j in joins]),
                # how many cuts a listener may notice, beside the medians
                "word_before_off_15pct": share(joins, lambda j: abs(j.before_ratio - 1) > 0.15),
                "pitch_step_over_2st": share(joins, lambda j: j.pitch_step_st > 2),
                "word_after_ratio": summary([j.after_ratio for j in joins]),
                "pitch_step_st": summary([j.pitch_step_st for j in joins]),
                "level_step_db": summary([j.level_step_db for j in joins]),
            }
            for name, joins in results.items()
        },
        "window_seams": {
            "count": len(seams),
            "added_silence_ms": summary([s["added_silence_ms"] for s in seams]),
            "level_step_db": summary([s["level_step_db"] for s in seams]),
        },
        "audio_length_vs_whole": {name: summary(v) for name, v in lengths.items()},
        "timbre_vs_whole": {
            name: {
                "octave_band_step_db": summary([t[0] for t in values]),
                "bright_share_step_db": summary([t[1] for t in values]),
            }
            for name, values in timbre.items()
        },
        "engine_time_vs_whole": {name: summary(v) for name, v in cost.items()},
        "level_vs_whole_db": {name: summary(v) for name, v in levels.items()},
        "first_audio_ms": {name: summary(v) for name, v in first.items()},
        "cuts": [asdict(j) | {"design": name} for name, joins in results.items() for j in joins],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2, default=float) + "\n", encoding="utf-8")
    print(f"load before {load_before[0]:.2f}, after {report['load_average_after'][0]:.2f}")
    print(
        f"{'design':<14}{'silence +ms (median/worst)':>28}{'word before x':>16}"
        f"{'pitch st':>10}{'level dB':>10}{'word >15% off':>15}{'pitch >2 st':>13}"
    )
    keys = ("added_silence_ms", "word_before_ratio", "pitch_step_st", "level_step_db")
    for name, data in report["joins"].items():
        s, w, p, lv = (data[k] for k in keys)
        print(
            f"{name:<14}{s['median']:>14.0f} / {s['worst']:<11.0f}{w['median']:>16.2f}"
            f"{p['median']:>10.2f}{lv['median']:>10.2f}{data['word_before_off_15pct']:>15.0%}"
            f"{data['pitch_step_over_2st']:>13.0%}   ({data['count']} cuts)"
        )
    seam = report["window_seams"]
    silence, level = seam["added_silence_ms"], seam["level_step_db"]
    print(
        f"{'window seams':<14}{silence.get('median', 0):>14.0f} / {silence.get('worst', 0):<11.0f}"
        f"{'':>26}{level.get('median', 0):>10.2f}   ({seam['count']} seams)"
    )
    for name, data in report["timbre_vs_whole"].items():
        bands, bright = data["octave_band_step_db"], data["bright_share_step_db"]
        print(
            f"{name:<14} spectrum vs whole: octave bands {bands['median']:.2f} dB"
            f" (worst {bands['worst']:.2f}),"
            f" above {BRIGHT_HZ} Hz {bright['median']:+.2f} dB (worst {bright['worst']:+.2f})"
        )
    for name in ("streamed", "cut", "cut+context"):
        print(
            f"{name:<14} audio length x{report['audio_length_vs_whole'][name]['median']:.3f}"
            f" (worst x{report['audio_length_vs_whole'][name]['worst']:.3f}),"
            f" engine time x{report['engine_time_vs_whole'][name]['median']:.2f},"
            f" first audio {report['first_audio_ms'][name]['median']:.0f} ms"
            f" (whole: {report['first_audio_ms']['whole']['median']:.0f} ms)"
        )
    for name, level in report["level_vs_whole_db"].items():
        print(f"{name:<14} level vs whole {level['median']:+.2f} dB median (worst {level['worst']:+.2f})")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
