"""Who may write into a weight cache, and tidying up after writers that died.

Filling a cache is a read-modify-write of ``manifest.json``, so one exclusive lock per cache
(``filelock.FileLock``: ``flock(2)``) serialises writers; readers need none, since files and the manifest
are installed by atomic renames. A ``flock`` dies with its process, so a killed fetch never leaves the
cache locked, and every ``.staging-*`` folder the holder sees belongs to a dead writer: removed then.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

LOCK_FILE = ".lock"
STAGING_PREFIX = ".staging-"

_log = logging.getLogger(__name__)


@contextlib.contextmanager
def cache_lock(root: Path) -> Iterator[None]:
    """Hold the cache's exclusive writer lock; say so once when another process has it (it may be minutes).

    Creates ``root``. Raises :class:`OSError` when the folder cannot be created or locked (read-only).
    """
    root.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(root / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        _log.warning("waiting for another process filling the weight cache %s", root)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def try_cache_lock(root: Path) -> Iterator[bool]:
    """Like :func:`cache_lock` but never waits: yields False when the lock is busy or cannot be taken."""
    try:
        lock = FileLock(str(root / LOCK_FILE))
        lock.acquire(timeout=0)
    except (Timeout, OSError):
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


@contextlib.contextmanager
def staging_dir(root: Path) -> Iterator[Path]:
    """A scratch folder on the cache's own filesystem, so installing a file is an atomic rename.

    Call with the cache lock held: that is what lets :func:`remove_stale_staging` know leftovers are stale.
    """
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=root))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def stale_staging(root: Path) -> list[Path]:
    """``.staging-*`` folders in ``root`` (stale only when seen by the holder of the cache lock)."""
    try:
        return sorted(path for path in root.glob(f"{STAGING_PREFIX}*") if path.is_dir())
    except OSError:
        return []


def remove_stale_staging(root: Path) -> list[Path]:
    """Delete the staging folders of writers that died (call with the cache lock held); return them."""
    leftovers = stale_staging(root)
    for path in leftovers:
        _log.info("removing %s, left by an interrupted weight fetch", path)
        shutil.rmtree(path, ignore_errors=True)
    return leftovers
