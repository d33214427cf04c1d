"""The Kokoro weight cache: one directory both engines load from, filled from the first source that works.

Why a cache of our own instead of each library's downloader: the container must start offline (the model
baked in at build time or pulled from S3), the same files must serve the onnx and the torch engine, and a
failed start must say *every* place that was tried. So provisioning is explicit: sources are tried in
order (:mod:`tts_container.weight_sources`), each checks the sha256 of what it brings, and the result is
recorded in ``manifest.json``. A filled cache is recognised from the manifest alone (file sizes), so a
restart costs milliseconds; ``kokoro-weights verify`` re-hashes everything when in doubt.

Layout (also the layout of an explicit source directory and of an ``s3://`` model cache)::

    config.json             Kokoro config: vocab and hyper-parameters (hexgrad/Kokoro-82M)
    kokoro-v1.0.int8.onnx   int8 ONNX export (onnx engine)
    kokoro-v1_0.pth         fp32 checkpoint (torch engine; only from a directory, S3 or the hub)
    voices.npz              every voice's style table, float32 (510, 1, 256), keyed by voice name
    manifest.json           name -> {sha256, size, source}
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from tqdm import tqdm

CACHE_ENV = "STRANDS_KOKORO_CACHE"
CONFIG_FILE = "config.json"
ONNX_FILE = "kokoro-v1.0.int8.onnx"
TORCH_FILE = "kokoro-v1_0.pth"
VOICES_FILE = "voices.npz"
MANIFEST_FILE = "manifest.json"

Part = Literal["onnx", "torch"]
PART_FILES: dict[Part, frozenset[str]] = {
    "onnx": frozenset({CONFIG_FILE, ONNX_FILE, VOICES_FILE}),
    "torch": frozenset({CONFIG_FILE, TORCH_FILE, VOICES_FILE}),
}

_HASH_BLOCK = 1 << 20


class IntegrityError(RuntimeError):
    """A file's sha256 is not the pinned one: the source is corrupt or not what we pinned."""


class SourceUnavailable(RuntimeError):
    """A source cannot provide the files (not configured, unreachable, missing a file). Try the next."""


class WeightsUnavailable(RuntimeError):
    """Every source failed; the message lists each one and why, so the operator sees the whole picture."""

    def __init__(self, failures: Sequence[tuple[str, str]]) -> None:
        self.failures = list(failures)
        lines = "\n".join(f"  - {label}: {reason}" for label, reason in self.failures)
        super().__init__(f"no source could provide the Kokoro weights; tried:\n{lines}")


class WeightsSource(Protocol):
    """Somewhere the weights can come from. ``fetch`` writes the named files into ``staging``."""

    @property
    def label(self) -> str:
        """Human-readable origin (e.g. ``s3://bucket/kokoro``) used in the manifest and in errors."""
        ...

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        """Write every file in ``names`` into ``staging``, sha256-checked; raise on any failure."""
        ...


@dataclass(frozen=True)
class CachedWeights:
    """Paths into a filled cache directory."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def onnx_model(self) -> Path:
        return self.root / ONNX_FILE

    @property
    def torch_model(self) -> Path:
        return self.root / TORCH_FILE

    @property
    def voices(self) -> Path:
        return self.root / VOICES_FILE


def default_cache_dir() -> Path:
    """``$STRANDS_KOKORO_CACHE`` or ``~/.cache/strands-kokoro``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "strands-kokoro"


def sha256_of(path: Path, *, progress: bool = False) -> str:
    """Hash a file in blocks (the model does not need to fit in memory twice)."""
    digest = hashlib.sha256()
    with (
        path.open("rb") as stream,
        tqdm(
            total=path.stat().st_size,
            unit="B",
            unit_scale=True,
            desc=f"sha256 {path.name}",
            disable=not progress or None,
            leave=False,
        ) as bar,
    ):
        while block := stream.read(_HASH_BLOCK):
            digest.update(block)
            bar.update(len(block))
    return digest.hexdigest()


def check_sha256(path: Path, expected: str, what: str) -> str:
    """Raise :class:`IntegrityError` unless ``path`` hashes to ``expected``; return the digest."""
    actual = sha256_of(path, progress=True)
    if actual != expected:
        raise IntegrityError(f"{what}: sha256 {actual} does not match the pinned {expected}")
    return actual


def read_manifest(root: Path) -> dict[str, dict[str, object]]:
    """The ``files`` table of a cache (or source) manifest; empty when there is none or it is unreadable."""
    try:
        data = json.loads((root / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


def missing_files(root: Path, names: frozenset[str]) -> frozenset[str]:
    """Names the manifest does not vouch for (absent from it, or the file's size differs)."""
    manifest = read_manifest(root)
    missing = set()
    for name in names:
        entry = manifest.get(name)
        path = root / name
        if not entry or not path.is_file() or path.stat().st_size != entry.get("size"):
            missing.add(name)
    return frozenset(missing)


def ensure_weights(
    cache_dir: Path | str | None = None,
    *,
    part: Part = "onnx",
    sources: Sequence[WeightsSource] | None = None,
) -> CachedWeights:
    """Return a cache holding ``part``'s files, filling what is missing from the first source that works.

    Idempotent: when the manifest already vouches for every file nothing is read or fetched.
    """
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    needed = missing_files(root, PART_FILES[part])
    if not needed:
        return CachedWeights(root)
    if sources is None:
        from tts_container.weight_sources import default_sources

        sources = default_sources()
    root.mkdir(parents=True, exist_ok=True)
    failures: list[tuple[str, str]] = []
    for source in sources:
        try:
            with _staging_dir(root) as staging:
                source.fetch(needed, staging)
                _install(root, staging, needed, source.label)
            return CachedWeights(root)
        except Exception as exc:  # every failure is reported below, none is swallowed
            failures.append((source.label, f"{type(exc).__name__}: {exc}"))
    raise WeightsUnavailable(failures)


def verify_cache(cache_dir: Path | str | None = None) -> list[str]:
    """Re-hash every file the manifest lists; return the problems found (empty list = all good)."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    manifest = read_manifest(root)
    if not manifest:
        return [f"{root / MANIFEST_FILE}: missing or unreadable"]
    problems = []
    for name, entry in sorted(manifest.items()):
        path = root / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif sha256_of(path, progress=True) != entry.get("sha256"):
            problems.append(f"{name}: sha256 differs from the manifest")
    return problems


@contextlib.contextmanager
def _staging_dir(root: Path) -> Iterator[Path]:
    """A scratch folder on the cache's own filesystem, so installing a file is an atomic rename."""
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _install(root: Path, staging: Path, names: frozenset[str], label: str) -> None:
    """Move staged files into the cache and record them; the manifest is written last, atomically."""
    absent = sorted(name for name in names if not (staging / name).is_file())
    if absent:
        raise SourceUnavailable(f"did not provide {', '.join(absent)}")
    manifest = read_manifest(root)
    for name in sorted(names):
        staged = staging / name
        manifest[name] = {"sha256": sha256_of(staged), "size": staged.stat().st_size, "source": label}
        os.replace(staged, root / name)
    tmp = staging / MANIFEST_FILE
    tmp.write_text(json.dumps({"version": 1, "files": manifest}, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, root / MANIFEST_FILE)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``kokoro-weights`` console script (argparse front end: :mod:`tts_container.weights_cli`)."""
    from tts_container.weights_cli import main as cli_main

    return cli_main(argv)
