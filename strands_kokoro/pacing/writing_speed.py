"""How fast the agent's model writes, as the pacer sees it: when the sentence being written will end.

Kept apart from :mod:`strands_kokoro.pacing.pacer` for the same reason as
:mod:`strands_kokoro.pacing.engine_speed`: it is a model of one party (here the LLM), not a decision. The
pacer asks it when the rest of a sentence is likely written, and how often it gets to decide again (the time
between two pieces of text), so a cut that must be made is made while it still helps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from strands_kokoro.text.chunker import Sentence

__all__ = ["WritingSpeed"]

# The length of a sentence before any was seen (a small LLM's answers: 60-100 characters).
TYPICAL_SENTENCE_CHARS = 80.0
# However far along a sentence is, at least this much of it is expected still to come.
MIN_MISSING_CHARS = 20.0
# A model writing less than this many times faster than speech is "slow": about long sentences it is
# cautious (at least half again as much as is written so far), where waiting too long shows at once.
SLOW_RATIO = 4.0


class WritingSpeed:
    """The turn's writing rate so far, the mean sentence length so far, and the time between writes."""

    def __init__(self) -> None:
        self.first_text_at: float | None = None
        self._first_offset = 0
        self._written = 0  # offset of the end of the text written so far
        self._sentence_chars = TYPICAL_SENTENCE_CHARS
        self._last_write_at: float | None = None
        self.write_gap_ms = 0.0  # running mean time between two writes

    def wrote(self, sentences: Sequence[Sentence], pending: Sentence, now: float) -> None:
        for sentence in sentences:
            self._sentence_chars += 0.3 * (len(sentence) - self._sentence_chars)
        if self.first_text_at is None and (sentences or pending):
            self.first_text_at = now
            self._first_offset = (sentences[0] if sentences else pending).start
        written = max(self._written, pending.end, *(s.end for s in sentences))
        if written > self._written:
            if self._last_write_at is not None:
                self.write_gap_ms += 0.3 * (now - self._last_write_at - self.write_gap_ms)
            self._last_write_at = now
        self._written = written

    def waited_ms(self, now: float) -> float:
        """How long since the first text of the turn."""
        return 0.0 if self.first_text_at is None else now - self.first_text_at

    def sentence_done_at(self, pending: Sentence, now: float, *, ms_per_char: float) -> float:
        """When the sentence being written (``pending`` of it so far) is expected to be complete."""
        first = self.first_text_at if self.first_text_at is not None else now
        rate = (self._written - self._first_offset) / max(1.0, now - first)  # characters per ms
        missing = max(self._sentence_chars - len(pending), MIN_MISSING_CHARS)
        if rate * ms_per_char < SLOW_RATIO:
            missing = max(missing, 0.5 * len(pending))
        return now + (missing / rate if rate > 0 else math.inf)
