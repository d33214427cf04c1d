"""Speech in: a cascade voice agent for Strands' ``BidiAgent`` (the ``listen`` extra).

:class:`~strands_kokoro.listening.cascade.KokoroCascade` is a Strands ``BidiModel``: the user's audio in,
voice activity (silero), end of turn and barge-in by voice, Whisper, any Strands text model, and the
answer spoken by a Kokoro server through ``KokoroSpeech``. Names load lazily: importing this package
imports neither Strands nor faster-whisper nor onnxruntime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from strands_kokoro.listening.cascade import KokoroCascade
    from strands_kokoro.listening.events import ListeningErrorEvent, SpeechErrorEvent, UserSpeechEvent
    from strands_kokoro.listening.memory import ConversationInMemory, ConversationMemory, KeptHistory
    from strands_kokoro.listening.options import ListeningOptions
    from strands_kokoro.listening.speech_to_text import WhisperTranscriber

_EXPORTS: dict[str, str] = {
    "KokoroCascade": "strands_kokoro.listening.cascade",
    "ConversationMemory": "strands_kokoro.listening.memory",
    "ConversationInMemory": "strands_kokoro.listening.memory",
    "KeptHistory": "strands_kokoro.listening.memory",
    "ListeningOptions": "strands_kokoro.listening.options",
    "WhisperTranscriber": "strands_kokoro.listening.speech_to_text",
    "ListeningErrorEvent": "strands_kokoro.listening.events",
    "SpeechErrorEvent": "strands_kokoro.listening.events",
    "UserSpeechEvent": "strands_kokoro.listening.events",
}

__all__ = [
    "ConversationInMemory",
    "ConversationMemory",
    "KeptHistory",
    "KokoroCascade",
    "ListeningErrorEvent",
    "ListeningOptions",
    "SpeechErrorEvent",
    "UserSpeechEvent",
    "WhisperTranscriber",
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'strands_kokoro.listening' has no attribute {name!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"{name} needs the 'listen' extra (strands-kokoro[agent,listen]); {exc}") from exc
    value = getattr(module, name)
    globals()[name] = value
    return value
