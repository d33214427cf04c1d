"""How ``KokoroSpeech`` speaks, set once and read by every turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from strands_kokoro.pacer import PacingPolicy
from strands_kokoro.protocol import DEFAULT_SAMPLE_RATE, DEFAULT_VOICE, AudioFormatName
from strands_kokoro.sessions.base import SpeechSession

__all__ = ["SessionFactory", "SpeechMode", "SpeechOptions"]

SpeechMode = Literal["bidi", "batch"]
SessionFactory = Callable[[], SpeechSession]


@dataclass(frozen=True, slots=True)
class SpeechOptions:
    """Everything a turn needs to know about how to speak (set once on ``KokoroSpeech``)."""

    mode: SpeechMode = "bidi"
    voice: str = DEFAULT_VOICE
    speed: float = 1.0
    sample_rate: int = DEFAULT_SAMPLE_RATE
    lang: str | None = None  # None: the voice's language
    pacing: PacingPolicy = "latency"
    max_chars: int | None = 350
    tool_filler: str | None = "One moment."
    tool_filler_after_s: float = 1.0
    reconnect_attempts: int = 2
    reconnect_backoff_s: float = 0.25
    audio_format: AudioFormatName = "pcm"
