"""The torch engine on the checkpoint derived from the int8 export, against the onnx engine on the export.

Both engines hold the same weights (:mod:`tts_container.weights.conversion`); the torch one computes in
float where onnxruntime rounds activations to 8 bits, and renders through kokoro's own iSTFT, where the
export's is 1.5x louder. Per held-out sentence (no test or calibration text uses them), both on the CPU,
each segment whole: how many tokens' durations differ (and by how much), what Whisper hears (WER), the
log-mel distance of the torch audio from the onnx audio with the level difference apart
(:mod:`benchmarks.log_mel`), and, when the ``quality`` group is installed, DNSMOS for both::

    uv run --all-extras --group quality python -m benchmarks.torch_converted

The torch part of the default cache is derived first if it is not there (about a minute).
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.log_mel import log_mel_distance
from benchmarks.machine import MachineAt, results_path, save_results
from benchmarks.speech_check import transcribe, word_error_rate
from tts_container.engines.base import NATIVE_SAMPLE_RATE, Audio

RESULTS = Path(__file__).parent / "results" / "torch_converted.json"

# (voice, sentence): both accents, female and male voices; used by no other test or calibration text, and
# spelled alike in American and British English (Whisper writes American spellings).
HELD_OUT: tuple[tuple[str, str], ...] = (
    ("af_heart", "Sailing boats drifted slowly past the old lighthouse."),
    ("af_heart", "My grandmother grows tomatoes and basil on her balcony."),
    ("am_michael", "The museum opens its new dinosaur exhibit next month."),
    ("am_michael", "Please send me the final report before lunch on Friday."),
    ("bf_emma", "A gentle rain fell over the quiet village all night."),
    ("bf_emma", "Fresh bread from the corner bakery smells wonderful."),
    ("bm_george", "The orchestra rehearsed the symphony twice this week."),
    ("bm_george", "Our friends painted their front door a bright yellow."),
)


@dataclass(frozen=True)
class Compared:
    """One sentence from both engines."""

    voice: str
    sentence: str
    tokens: int
    durations_differing: int
    largest_duration_step: int
    torch_wer: float
    onnx_wer: float
    mel_distance_db: float
    level_db: float
    torch_heard: str
    onnx_heard: str


def whole(pieces: Any) -> Audio:
    """A request's audio, its pieces joined."""
    parts = [piece.audio for piece in pieces]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def pcm16(audio: Audio) -> bytes:
    return bytes((np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())


def compare(
    torch_engine: Any, onnx_engine: Any, phonemizer: Any, voice: str, sentence: str
) -> tuple[Compared, Audio, Audio]:
    """Durations per token on the same phonemes, then both renditions heard and measured."""
    from tts_container.text.g2p import split_phonemes

    tokens = differing = largest = 0
    for segment in split_phonemes(phonemizer.phonemize(sentence, lang="en-us", voice=voice)):
        ours = torch_engine.prosody(segment, voice=voice, speed=1.0).durations
        theirs = onnx_engine.prosody(segment, voice=voice, speed=1.0).durations
        assert len(ours) == len(theirs)
        steps = [abs(a - b) for a, b in zip(ours, theirs, strict=True)]
        tokens += len(steps)
        differing += sum(step > 0 for step in steps)
        largest = max(largest, *steps)
    ours_audio = whole(torch_engine.segments(sentence, voice=voice, speed=1.0, lang="en-us"))
    theirs_audio = whole(onnx_engine.segments(sentence, voice=voice, speed=1.0, lang="en-us"))
    ours_heard = transcribe(pcm16(ours_audio), NATIVE_SAMPLE_RATE)
    theirs_heard = transcribe(pcm16(theirs_audio), NATIVE_SAMPLE_RATE)
    mel = log_mel_distance(ours_audio, theirs_audio)
    row = Compared(
        voice,
        sentence,
        tokens,
        differing,
        largest,
        word_error_rate(sentence, ours_heard),
        word_error_rate(sentence, theirs_heard),
        round(mel.distance_db, 3),
        round(mel.level_db, 3),
        ours_heard,
        theirs_heard,
    )
    return row, ours_audio, theirs_audio


def dnsmos(audio: Audio) -> dict[str, float] | None:
    """DNSMOS P.835 (OVRL, SIG, BAK) at 16 kHz; None without the ``quality`` group."""
    try:
        from benchmarks.dnsmos import scores
    except ImportError:
        return None
    try:
        return scores(audio)
    except ImportError:
        return None


def run(threads: int) -> dict[str, Any]:
    from tts_container.engines.onnx_engine import OnnxEngine
    from tts_container.engines.torch_engine import TorchEngine
    from tts_container.text.g2p import Phonemizer

    torch_engine = TorchEngine.from_cache(device="cpu", threads=threads)
    onnx_engine = OnnxEngine.from_cache(threads=threads)
    phonemizer = Phonemizer()
    rows, scored = [], []
    for voice, sentence in HELD_OUT:
        row, ours, theirs = compare(torch_engine, onnx_engine, phonemizer, voice, sentence)
        rows.append(row)
        scored.append((dnsmos(ours), dnsmos(theirs)))
        print(
            f"{voice:10s} tokens {row.tokens:3d} differing {row.durations_differing:2d} "
            f"WER {row.torch_wer:.2f}/{row.onnx_wer:.2f} mel {row.mel_distance_db:.2f} dB "
            f"level {row.level_db:+.2f} dB | {row.torch_heard}"
        )
    tokens = sum(r.tokens for r in rows)
    words = [len(sentence.split()) for _, sentence in HELD_OUT]
    summary: dict[str, Any] = {
        "durations_differing": round(sum(r.durations_differing for r in rows) / tokens, 4),
        "largest_duration_step": max(r.largest_duration_step for r in rows),
        "torch_wer": round(sum(r.torch_wer * n for r, n in zip(rows, words, strict=True)) / sum(words), 4),
        "onnx_wer": round(sum(r.onnx_wer * n for r, n in zip(rows, words, strict=True)) / sum(words), 4),
        "mel_distance_db": round(statistics.fmean(r.mel_distance_db for r in rows), 3),
        "level_db": round(statistics.fmean(r.level_db for r in rows), 3),
    }
    if all(ours is not None and theirs is not None for ours, theirs in scored):
        for side, index in (("torch", 0), ("onnx", 1)):
            summary[f"{side}_dnsmos"] = {
                name: round(statistics.fmean(pair[index][name] for pair in scored), 3)  # type: ignore[index]
                for name in scored[0][0]  # type: ignore[union-attr]
            }
        summary["dnsmos_torch_minus_onnx"] = {
            name: round(summary["torch_dnsmos"][name] - summary["onnx_dnsmos"][name], 3)
            for name in summary["torch_dnsmos"]
        }
    return {"threads": threads, "sentences": [asdict(row) for row in rows], "summary": summary}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="each engine's CPU threads")
    args = parser.parse_args(argv)
    out = results_path(RESULTS)
    started = MachineAt.now()
    result = run(args.threads)
    for name, value in result["summary"].items():
        print(f"{name}: {value}")
    save_results(out, result, started)


if __name__ == "__main__":
    main()
