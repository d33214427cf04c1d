"""The Kokoro weight cache: one directory both engines load from, filled from the first source that works.

:func:`ensure_weights` takes its sources in order (it imports none; :mod:`tts_container.weights.provisioning`
wires the real ones), each checks the sha256 of what it brings, and ``manifest.json`` records the result;
a failed start names every source tried. Each start re-hashes the files it loads (a cache may be a folder
someone else filled); writers hold the cache lock (:mod:`tts_container.weights.lock`). The layout, also that
of a source directory and an ``s3://`` cache: ``config.json``, ``kokoro-v1.0.int8.onnx``,
``kokoro-v1_0.pth``, ``voices.npz`` (float32 ``(510, 1, 256)`` per voice) and ``manifest.json`` (name ->
sha256, size, source, ``derived_from``). A derived file is bad once an input it lists changed its sha256.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from tqdm import tqdm

from tts_container.weights.lock import (
    cache_lock,
    remove_stale_staging,
    staging_dir,
    stale_staging,
    try_cache_lock,
)

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

Pins = Mapping[str, frozenset[str]]
"""File name -> every sha256 accepted for it (one file may have several pinned origins)."""

MISSING = "missing"
NOT_IN_MANIFEST = "not in the manifest"
DERIVED_FROM = "derived_from"

_HASH_BLOCK = 1 << 20
_log = logging.getLogger(__name__)


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


@runtime_checkable
class DerivingSource(Protocol):
    """A source that computes its files from files already in the cache instead of fetching them."""

    @property
    def label(self) -> str: ...

    def fetch(self, names: frozenset[str], staging: Path) -> None: ...

    @property
    def derived_from(self) -> Mapping[str, str]:
        """Cache file name -> sha256 of each file the fetched ones are computed from (recorded with them)."""
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

    def derived_dir(self, kind: str, source: Path) -> Path | None:
        """Where data computed from ``source`` is kept: a folder named by the source's recorded sha256,
        so it can never be used with another model file (``kind/<file stem>-<sha256 prefix>``); None
        when the manifest records no hash for it."""
        try:
            manifest = json.loads((self.root / MANIFEST_FILE).read_text(encoding="utf-8"))
            digest = str(manifest["files"][source.name]["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return self.root / kind / f"{source.stem}-{digest[:16]}"


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


def check_sha256(path: Path, expected: str | Collection[str], what: str) -> str:
    """Raise :class:`IntegrityError` unless ``path`` hashes to ``expected`` (or one of them); return it."""
    accepted = frozenset({expected}) if isinstance(expected, str) else frozenset(expected)
    actual = sha256_of(path, progress=True)
    if actual not in accepted:
        pinned = next(iter(accepted)) if len(accepted) == 1 else f"one of {', '.join(sorted(accepted))}"
        raise IntegrityError(f"{what}: sha256 {actual} does not match the pinned {pinned}")
    return actual


def read_manifest(root: Path) -> dict[str, dict[str, object]]:
    """The ``files`` table of a cache (or source) manifest; empty when there is none or it is unreadable."""
    try:
        data = json.loads((root / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


def cache_problems(root: Path, names: Iterable[str], *, pins: Pins | None = None) -> dict[str, str]:
    """Why each of ``names`` cannot be used as it lies in ``root``; an empty dict means all can.

    Every present file is re-hashed, not only sized: a cache may be a folder someone else filled (a model
    dir SageMaker downloaded from a bucket, a baked image layer), and a same-size swap or bit flip must not
    be loaded. With ``pins``, a pinned file must
    also hash to one of its pins, whatever the manifest beside it claims.
    """
    manifest = read_manifest(root)
    problems: dict[str, str] = {}
    for name in sorted(names):
        entry = manifest.get(name)
        path = root / name
        if not path.is_file():
            problems[name] = MISSING
        elif not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            problems[name] = NOT_IN_MANIFEST
        elif path.stat().st_size != entry.get("size"):
            problems[name] = "size differs from the manifest"
        elif stale := _changed_input(manifest, entry):
            problems[name] = f"derived from another {stale}"
        else:
            actual = sha256_of(path, progress=True)
            if actual != entry["sha256"]:
                problems[name] = "sha256 differs from the manifest"
            elif pins is not None and name in pins and actual not in pins[name]:
                problems[name] = f"sha256 {actual} is not a pinned one"
    return problems


def ensure_weights(
    cache_dir: Path | str | None = None,
    *,
    part: Part = "onnx",
    sources: Sequence[WeightsSource],
    pins: Pins | None = None,
) -> CachedWeights:
    """Return a cache holding ``part``'s files; what is missing or bad comes from the first working source.

    ``sources`` is the caller's choice (the production order is
    :func:`tts_container.weights.sources.default_sources`, wired by
    :mod:`tts_container.weights.provisioning`), so this module knows nothing of hubs or buckets. ``pins``
    (name -> accepted sha256s) makes a cached file that is not one of its pins count as bad. When every file
    checks out nothing is locked or fetched; otherwise the fill runs under the cache's writer lock
    (:mod:`tts_container.weights.lock`).
    """
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    names = PART_FILES[part]
    problems = cache_problems(root, names, pins=pins)
    if not problems:
        _tidy(root)
        return CachedWeights(root)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(cache_lock(root))
        except OSError as exc:  # a read-only cache (baked image, model dir) whose files are bad or missing
            failures = [*_findings(root, problems), (f"cache {root}", f"cannot lock it to write: {exc}")]
            raise WeightsUnavailable(failures) from exc
        remove_stale_staging(root)
        # Re-check under the lock: another process may have filled the cache while we waited for it.
        problems = cache_problems(root, names, pins=pins)
        if problems:
            _fill(root, frozenset(problems), sources, pins, _findings(root, problems))
    return CachedWeights(root)


def verify_cache(cache_dir: Path | str | None = None, *, pins: Pins | None = None) -> list[str]:
    """Re-hash every file the manifest lists (and check ``pins``); return the problems (empty = all good)."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    manifest = read_manifest(root)
    if not manifest:
        return [f"{root / MANIFEST_FILE}: missing or unreadable"]
    return [f"{name}: {reason}" for name, reason in cache_problems(root, manifest, pins=pins).items()]


def _changed_input(manifest: Mapping[str, object], entry: Mapping[str, object]) -> str | None:
    """The first file ``entry`` was derived from that the manifest now lists with another sha256.

    An input no longer in the manifest changes nothing: the derived file is still what it was.
    """
    inputs = entry.get(DERIVED_FROM)
    if not isinstance(inputs, dict):
        return None
    for name, digest in sorted(inputs.items()):
        current = manifest.get(name)
        if isinstance(current, dict) and current.get("sha256") != digest:
            return str(name)
    return None


def _findings(root: Path, problems: Mapping[str, str]) -> list[tuple[str, str]]:
    """Files present but not usable, as report lines (a plain miss is not worth reporting)."""
    findings = [
        (f"cache {root}", f"{name}: {reason}")
        for name, reason in problems.items()
        if reason not in (MISSING, NOT_IN_MANIFEST)
    ]
    for label, reason in findings:
        _log.warning("%s: %s; fetching it again", label, reason)
    return findings


def _fill(
    root: Path,
    needed: frozenset[str],
    sources: Sequence[WeightsSource],
    pins: Pins | None,
    failures: list[tuple[str, str]],
) -> None:
    """Try each source in order (cache lock held); raise with every failure when none works."""
    for source in sources:
        try:
            with staging_dir(root) as staging:
                source.fetch(needed, staging)
                inputs = source.derived_from if isinstance(source, DerivingSource) else None
                _install(root, staging, needed, source.label, pins, inputs)
            return
        except Exception as exc:  # every failure is reported below, none is swallowed
            failures.append((source.label, f"{type(exc).__name__}: {exc}"))
    raise WeightsUnavailable(failures)


def _tidy(root: Path) -> None:
    """Remove staging folders a killed fetch left behind, unless a live writer holds the lock right now."""
    if stale_staging(root):
        with try_cache_lock(root) as held:
            if held:
                remove_stale_staging(root)


def _install(
    root: Path,
    staging: Path,
    names: frozenset[str],
    label: str,
    pins: Pins | None,
    derived_from: Mapping[str, str] | None = None,
) -> None:
    """Move staged files into the cache and record them; the manifest is written last, atomically.

    Runs under the cache lock: the manifest read here is the latest, and nobody writes it until we are done.
    With ``pins``, nothing is installed unless every pinned file is one of its pins (whatever the source).
    ``derived_from`` (what a :class:`DerivingSource` computed them from) is recorded with each file.
    """
    absent = sorted(name for name in names if not (staging / name).is_file())
    if absent:
        raise SourceUnavailable(f"did not provide {', '.join(absent)}")
    digests = {name: sha256_of(staging / name) for name in sorted(names)}
    if pins is not None:
        for name, digest in digests.items():
            if name in pins and digest not in pins[name]:
                raise IntegrityError(f"{name}: sha256 {digest} is not a pinned one")
    manifest = read_manifest(root)
    for name, digest in digests.items():
        staged = staging / name
        entry: dict[str, object] = {"sha256": digest, "size": staged.stat().st_size, "source": label}
        if derived_from:
            entry[DERIVED_FROM] = dict(derived_from)
        manifest[name] = entry
        os.replace(staged, root / name)
    tmp = staging / MANIFEST_FILE
    tmp.write_text(json.dumps({"version": 1, "files": manifest}, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, root / MANIFEST_FILE)
