"""The engine interface the server is written against.

An engine turns phonemes into 24 kHz float32 audio, one segment at a time. It is synchronous and
blocking on purpose: the server runs it in a bounded executor, never on the event loop, and pulls one
segment at a time so a long request streams and a ``cancel`` lands at the next segment boundary.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from strands_kokoro.protocol import Word

NATIVE_SAMPLE_RATE = 24_000

Audio = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment's audio and when each of its words is heard in it (ms from the segment's start)."""

    audio: Audio
    words: tuple[Word, ...] = ()


class Engine(Protocol):
    """A loaded Kokoro model shared by every session of the server."""

    name: str

    @property
    def voices(self) -> frozenset[str]:
        """Voice names this engine can speak with (e.g. ``af_heart``)."""
        ...

    def segments(self, text: str, *, voice: str, speed: float, lang: str) -> Iterator[Segment | Audio]:
        """Yield the audio of ``text`` segment by segment (split at the 510-phoneme limit and clauses).

        Each item is mono float32 at :data:`NATIVE_SAMPLE_RATE`, as a :class:`Segment` with word timings
        or as bare audio from an engine that has none. Blocking; called from a worker thread.
        """
        ...
