"""The engine's capacity, measured: audio seconds it renders per second, and listeners it keeps playing.

:class:`Capacity` takes every engine call's audio and its share of the engine's time
(:class:`~tts_container.scheduling.inference.CallShare`); with lanes, the ratio that counts is the one
taken with the engine full (:func:`full_at`). One listener needs :func:`listener_share` of it, so
:meth:`Capacity.listeners` is how many the admission serves at once (docs/operating.md, "Many listeners").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tts_container.engines.windowed_engine import WINDOW_GROWTH

# A listener's share of the engine when segments are rendered whole: the next is rendered while one
# plays (1.0), and a tenth more absorbs measurement noise and the network's jitter.
WHOLE_SEGMENT_SHARE = 1.1
# Engine time over which the capacity estimate forgets: long enough to average several answers,
# short enough to follow a machine that slows down (a noisy neighbour, thermal limits).
HORIZON_S = 30.0


def full_at(lanes: int) -> int:
    """Calls running at once that count as an engine with ``lanes`` full: both lanes of a two-lane
    engine, half the batch of one that batches more (admission decides when the engine is near full;
    fewer calls in a pass would make the estimate follow a lightly loaded engine's throughput, which
    grows with the batch and so would refuse the listeners a fuller batch serves)."""
    return max(2, lanes // 2)


def listener_share(renders_in_windows: bool) -> float:
    """Seconds of audio per second one listener needs from the engine for none to stall.

    Rendered in windows, a listener needs more than real time: each window is :data:`WINDOW_GROWTH`
    times the one before and must be ready before that one has played. The admission takes
    :data:`WINDOW_GROWTH`, a margin over the share below which a listener stutters, for a machine
    noisier than the one measured (docs/benchmarks.md, "What a listener needs of the engine").
    """
    return WINDOW_GROWTH if renders_in_windows else WHOLE_SEGMENT_SHARE


@dataclass(slots=True)
class _Ratio:
    """Audio seconds over engine seconds, both decayed over :data:`HORIZON_S` of engine time."""

    audio_s: float = 0.0
    engine_s: float = 0.0

    def record(self, audio_s: float, engine_s: float) -> None:
        keep = math.exp(-engine_s / HORIZON_S)
        self.audio_s = self.audio_s * keep + audio_s
        self.engine_s = self.engine_s * keep + engine_s

    @property
    def value(self) -> float | None:
        return self.audio_s / self.engine_s if self.engine_s > 0 and self.audio_s > 0 else None


@dataclass(slots=True)
class Capacity:
    """Seconds of audio the engine renders per second of its own time, and what one listener needs of
    it (``share``).

    Calls alone and calls side by side are measured apart: on a CPU a call alone on every core makes
    less audio per core than two calls on half the cores each, and several listeners are served side by
    side. The side-by-side ratio is followed between its measurements by the calls alone (a machine
    that slows down, or speeds up again, while one listener at a time is served shows there first):
    without that, an estimate too low to admit a second listener could never be measured again.
    """

    share: float = WHOLE_SEGMENT_SHARE
    # Calls running at once that count as the engine full (:func:`full_at`): 2 on a two-lane engine.
    full: int = 2
    alone: _Ratio = field(default_factory=_Ratio)
    side_by_side: _Ratio = field(default_factory=_Ratio)
    _alone_then: float | None = None  # the ratio alone when the side-by-side one was last measured

    def record(self, audio_s: float, engine_s: float, lanes: int = 1, peak: int | None = None) -> None:
        """One engine call made ``audio_s`` of audio in ``engine_s`` (its share of the engine), given
        ``lanes`` (1: the engine to itself) with at most ``peak`` calls running meanwhile (default
        ``lanes``).

        A call given a share that too few calls took (a lane beside nobody, a batch of two on an engine
        that batches 32) measures neither the engine alone nor the engine full: it is left out.
        """
        if lanes == 1:
            self.alone.record(audio_s, engine_s)
        elif (lanes if peak is None else peak) >= self.full:
            self.side_by_side.record(audio_s, engine_s)
            self._alone_then = self.alone.value

    @property
    def audio_per_s(self) -> float | None:
        """What the engine makes when it serves several listeners: the side-by-side ratio, moved as the
        ratio alone moved since (the ratio alone on an engine that never runs calls side by side)."""
        alone, shared = self.alone.value, self.side_by_side.value
        if shared is None:
            return alone
        if alone is None or self._alone_then is None:
            return shared
        return shared * alone / self._alone_then

    def listeners(self) -> int:
        """How many listeners the engine keeps playing at once (at least one)."""
        rate = self.audio_per_s
        # (a hair added: 3.3 / 1.1 is 2.9999999999999996 in floating point)
        return 1 if rate is None else max(1, math.floor(rate / self.share + 1e-9))
