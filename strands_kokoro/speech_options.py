"""How ``KokoroSpeech`` speaks, set once and read by every turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from strands_kokoro.pacer import PacingPolicy
from strands_kokoro.protocol import AudioFormatName
from strands_kokoro.sessions.base import SpeechSession

__all__ = ["SPEECH_MODES", "SessionFactory", "SpeechMode", "SpeechOptions"]

SpeechMode = Literal["bidi", "batch"]
SPEECH_MODES: tuple[SpeechMode, ...] = get_args(SpeechMode)
SessionFactory = Callable[[], SpeechSession]


@dataclass(frozen=True, slots=True)
class SpeechOptions:
    """Everything a turn needs to know about how to speak (set once on ``KokoroSpeech``, whose signature
    holds the defaults: they are stated there only)."""

    mode: SpeechMode
    voice: str
    speed: float
    sample_rate: int
    lang: str | None  # None: the voice's language
    pacing: PacingPolicy
    max_chars: int | None
    tool_filler: str | None
    tool_filler_after_s: float
    reconnect_attempts: int
    reconnect_backoff_s: float
    overload_retry_s: float  # the longest a refused request waits for a full server, from its refusal
    audio_format: AudioFormatName
    lexicon: tuple[tuple[str, str], ...] = ()  # words to phonemes, sent with every request
