"""The engine interface the server is written against.

An engine turns text into 24 kHz float32 audio, one piece at a time (a segment, or one window of a
segment: :mod:`tts_container.engines.windows`). It is synchronous and blocking on purpose: the server
runs it in a bounded executor, never on the event loop, and pulls one piece at a time so a long request
streams and a ``cancel`` lands at the next piece.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from strands_kokoro.protocol import Word

NATIVE_SAMPLE_RATE = 24_000

Audio = npt.NDArray[np.float32]

# How many engine calls share the engine while this one runs, as the server's inference pool sets it on
# the worker thread (1: the call has every core). An engine with more than one lane gives each call its
# share of the cores.
call_lanes: ContextVar[int] = ContextVar("call_lanes", default=1)


@dataclass(frozen=True, slots=True)
class Context:
    """Words spoken just before and just after a request's text, in the same sentence (not spoken by it)."""

    previous_text: str | None = None
    next_text: str | None = None


NO_CONTEXT = Context()


Ending = Literal["sentence", "clause", "continues"]


@dataclass(frozen=True, slots=True)
class Segment:
    """A segment's audio, whole or one window of it, and how it joins what comes before and after.

    ``words``: when each of the segment's words is heard (ms from the segment's first sample), on its
    first piece: the model's durations give them before any audio is vocoded, so captions can follow a
    segment that is heard while its later windows are still being rendered. ``lead``: ``"trim"`` lets
    the joiner shorten the silence before the first sound;
    ``"exact"`` means the audio starts at a word's onset (words were spoken just before it). ``ending``
    says which pause the joiner keeps after the last sound: a sentence's, a clause's, or none
    (``"continues"``: the audio already ends where the next word begins).
    """

    audio: Audio
    words: tuple[Word, ...] = ()
    first: bool = True
    last: bool = True
    lead: Literal["trim", "exact"] = "trim"
    ending: Ending = "sentence"


@dataclass(frozen=True, slots=True)
class VoiceCalibration:
    """What an engine needs done before ``voice`` streams, in ``steps`` small enough to run between
    requests (each renders one calibration sentence), then ``finish`` (fits
    and saves what the steps measured). Each is blocking: the server runs them on its inference pool."""

    voice: str
    steps: tuple[Callable[[], None], ...]
    finish: Callable[[], None]


class Engine(Protocol):
    """A loaded Kokoro model shared by every session of the server."""

    name: str
    # How the model runs, for operators (``/ping``, ``/stats``, ``/metrics``): the onnx engine's vocoder
    # variant (``dynamic`` or ``static`` int8, chosen at warm-up), the torch engine's precision.
    variant: str
    # How many calls the engine renders at once at its best throughput: 2 where its runtime gains more
    # from two calls on half the cores each than from one on all of them (onnxruntime on a CPU); the
    # batch size of an engine that renders several listeners' windows in one forward pass (the torch
    # engine on a GPU); else 1.
    lanes: int

    @property
    def voices(self) -> frozenset[str]:
        """Voice names this engine can speak with (e.g. ``af_heart``)."""
        ...

    def segments(
        self,
        text: str,
        *,
        voice: str,
        speed: float,
        lang: str,
        context: Context = NO_CONTEXT,
    ) -> Iterator[Segment | Audio]:
        """Yield the audio of ``text`` piece by piece (segments split at the 510-phoneme limit and
        clauses, each whole or in windows), spoken as part of ``context``'s sentence when given.
        The audio is a function of the arguments alone (never of the server's load): a request
        rendered again is the same, sample for sample, which a client resuming it relies on.

        Each item is mono float32 at :data:`NATIVE_SAMPLE_RATE`, as a :class:`Segment` or as bare audio
        (one whole segment) from an engine that has nothing more to say. Blocking; called from a worker
        thread, one ``next()`` at a time.
        """
        ...

    @property
    def renders_in_windows(self) -> bool:
        """Whether long segments are rendered window by window (chosen at load, once per process): a
        sentence's first audio then comes after its first window whatever its length, and the voice
        warm-up fitted (:data:`~strands_kokoro.protocol.DEFAULT_VOICE`) streams already. False: every
        segment is rendered in one call (an engine fast enough that windows do not pay)."""
        ...

    def calibration(self, voice: str) -> VoiceCalibration | None:
        """What must be done before ``voice``'s long segments stream, or None when nothing is (the
        engine renders whole segments fast enough, or ``voice`` is ready or unknown)."""
        ...


@dataclass(frozen=True, slots=True)
class BatchCounts:
    """What an engine that batches across listeners has rendered: its forward passes, the calls they
    held, the most one held, and how many passes held each number of calls (``/stats``, ``/metrics``)."""

    batches: int
    items: int
    largest: int
    sizes: dict[int, int]


@runtime_checkable
class Batching(Protocol):
    """An engine whose :attr:`Engine.lanes` are calls it renders in one forward pass."""

    def batch_counts(self) -> BatchCounts: ...


def batch_counts(engine: object) -> BatchCounts | None:
    """``engine``'s batch counts, or None for an engine that renders every call alone."""
    return engine.batch_counts() if isinstance(engine, Batching) else None
