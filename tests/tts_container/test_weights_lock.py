"""Concurrent writers and killed writers, with real processes on a real cache folder.

* Two fetches of different parts at once must both end up in ``manifest.json``: without the cache lock,
  each would write back the table it had read and the later one drop the other's entries.
* A fetch killed mid-download leaves its ``.staging-*`` folder; the next fill (or the next start, when the
  cache is already complete) removes it, but never the folder of a writer that is still alive.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tts_container.weights.cache import (
    CONFIG_FILE,
    PART_FILES,
    ensure_weights,
    read_manifest,
    verify_cache,
)
from tts_container.weights.lock import STAGING_PREFIX

# A writer whose source meets its peer before returning: without a lock both then install at the same
# moment (the old lost update); with the lock the peer is still waiting, so the meeting times out.
RENDEZVOUS_WRITER = r"""
import os, sys, time
from pathlib import Path
from tts_container.weights.cache import ensure_weights

cache, part, meeting, me, peer = sys.argv[1:]

class RendezvousSource:
    label = f"writer {me}"

    def fetch(self, names, staging):
        Path(meeting, f"{me}.names").write_text(" ".join(sorted(names)))
        for name in names:
            (staging / name).write_bytes(os.urandom(16 << 20))  # big enough that hashing takes a while
        Path(meeting, me).touch()
        deadline = time.monotonic() + 3.0
        while not Path(meeting, peer).exists() and time.monotonic() < deadline:
            time.sleep(0.002)

ensure_weights(cache, part=part, sources=[RendezvousSource()])
"""

# A writer that stages part of a file, says where, and hangs until it is killed.
HANGING_WRITER = r"""
import sys, time
from pathlib import Path
from tts_container.weights.cache import ensure_weights

cache, part, started = sys.argv[1:]

class HangingSource:
    label = "hangs"

    def fetch(self, names, staging):
        (staging / "partial.bin").write_bytes(b"x" * 4096)
        Path(started).write_text(str(staging))
        time.sleep(600)

ensure_weights(cache, part=part, sources=[HangingSource()])
"""


class BytesSource:
    """Test double: writes ``weights:<name>`` for every requested file."""

    label = "bytes"

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        for name in names:
            (staging / name).write_bytes(b"weights:" + name.encode())


def staging_folders(cache: Path) -> list[Path]:
    return sorted(cache.glob(f"{STAGING_PREFIX}*"))


@pytest.fixture
def start_hanging_writer(tmp_path: Path) -> Iterator[Callable[[Path], tuple[Path, subprocess.Popen[bytes]]]]:
    """Start a torch-part fetch into a cache that gets stuck in its source; return its staging folder.

    Every writer started is killed at teardown if the test left it alive.
    """
    processes: list[subprocess.Popen[bytes]] = []

    def start(cache: Path) -> tuple[Path, subprocess.Popen[bytes]]:
        started = tmp_path / f"started-{len(processes)}"
        command = [sys.executable, "-c", HANGING_WRITER, str(cache), "torch", str(started)]
        process = subprocess.Popen(command)
        processes.append(process)
        deadline = time.monotonic() + 60
        while not started.exists():
            assert process.poll() is None, "the hanging writer exited early"
            assert time.monotonic() < deadline, "the hanging writer never started fetching"
            time.sleep(0.02)
        return Path(started.read_text()), process

    try:
        yield start
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)


def kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def test_two_concurrent_fetches_keep_each_others_manifest_entries(tmp_path: Path) -> None:
    cache, meeting = tmp_path / "cache", tmp_path / "meeting"
    meeting.mkdir()
    writers = [
        subprocess.Popen([sys.executable, "-c", RENDEZVOUS_WRITER, str(cache), part, str(meeting), me, peer])
        for part, me, peer in (("onnx", "a", "b"), ("torch", "b", "a"))
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]

    assert set(read_manifest(cache)) == PART_FILES["onnx"] | PART_FILES["torch"]
    assert verify_cache(cache) == []  # every entry describes the file that is on disk
    fetched = [frozenset((meeting / f"{me}.names").read_text().split()) for me in ("a", "b")]
    assert sum(CONFIG_FILE in names for names in fetched) == 1  # the second writer reused the first's


HangingWriter = Callable[[Path], tuple[Path, subprocess.Popen[bytes]]]


def test_a_killed_fetch_leaves_staging_that_the_next_fill_removes(
    tmp_path: Path, start_hanging_writer: HangingWriter
) -> None:
    cache = tmp_path / "cache"
    staging, process = start_hanging_writer(cache)
    kill(process)
    assert staging_folders(cache) == [staging] and (staging / "partial.bin").exists()

    ensure_weights(cache, part="torch", sources=[BytesSource()])
    assert staging_folders(cache) == []
    assert set(read_manifest(cache)) == PART_FILES["torch"]


def test_a_complete_cache_is_tidied_at_the_next_start(
    tmp_path: Path, start_hanging_writer: HangingWriter
) -> None:
    cache = tmp_path / "cache"
    ensure_weights(cache, part="onnx", sources=[BytesSource()])
    staging, process = start_hanging_writer(cache)  # fetching the torch part
    kill(process)
    assert staging_folders(cache) == [staging]

    ensure_weights(cache, part="onnx", sources=[])  # complete: nothing to fetch, still tidied
    assert staging_folders(cache) == []


def test_a_live_writers_staging_is_left_alone(tmp_path: Path, start_hanging_writer: HangingWriter) -> None:
    cache = tmp_path / "cache"
    ensure_weights(cache, part="onnx", sources=[BytesSource()])
    staging, process = start_hanging_writer(cache)  # alive, holding the lock

    ensure_weights(cache, part="onnx", sources=[])  # a start while the writer is alive
    assert staging_folders(cache) == [staging]
    assert process.poll() is None
