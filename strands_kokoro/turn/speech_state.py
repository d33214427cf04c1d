"""Where a turn's speech is: speaking, or stopped for the rest of the turn while the text goes on."""

from __future__ import annotations

from enum import Enum
from typing import Final

__all__ = ["INTERRUPTED", "SpeechState"]


class SpeechState(Enum):
    """Where the turn's speech is: speaking, or stopped for the rest of the turn (the text goes on)."""

    SPEAKING = "speaking"
    INTERRUPTED = "interrupted"  # the listener spoke over it: nothing more is said
    FAILED = "failed"  # a failure its speech_error named: nothing more is said


# Why speech stops for the rest of a turn, besides a coded failure: the listener interrupted.
INTERRUPTED: Final = "interrupted"
