"""Engine output regrouped by segment: an engine yields pieces (a segment whole, or its windows)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tts_container.engines.base import Segment


def whole_segments(pieces: Iterable[Segment]) -> list[Segment]:
    """The engine's pieces (a segment whole, or its windows) put back together, one item per segment:
    the audio of its pieces in order, and its words (on its first piece)."""
    segments: list[Segment] = []
    parts: list[np.ndarray] = []
    words: tuple = ()
    for piece in pieces:
        parts.append(piece.audio)
        if piece.first:
            words = piece.words
        if piece.last:
            segments.append(Segment(np.concatenate(parts), words))
            parts = []
    return segments
