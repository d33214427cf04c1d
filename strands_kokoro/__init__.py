"""strands_kokoro: make Strands agents speak while they write (sentence-streamed Kokoro-82M TTS).

Public names are loaded lazily (module ``__getattr__``) so ``import strands_kokoro`` works with none of
the extras installed: the chunker and the sessions need no Strands, and ``KokoroSpeech`` imports
Strands only when it is first touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from strands_kokoro.sessions import EndpointError, SessionClosedError, SpeechSession, open_session
    from strands_kokoro.speech import KokoroSpeech
    from strands_kokoro.text.chunker import IncrementalSentenceChunker
    from strands_kokoro.text.speech_text import SpeechTextFilter, clean_for_speech

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "IncrementalSentenceChunker": "strands_kokoro.text.chunker",
    "SpeechTextFilter": "strands_kokoro.text.speech_text",
    "clean_for_speech": "strands_kokoro.text.speech_text",
    "KokoroSpeech": "strands_kokoro.speech",
    "open_session": "strands_kokoro.sessions",
    "EndpointError": "strands_kokoro.sessions",
    "SessionClosedError": "strands_kokoro.sessions",
    "SpeechSession": "strands_kokoro.sessions",
}

__all__ = [
    "EndpointError",
    "IncrementalSentenceChunker",
    "KokoroSpeech",
    "SessionClosedError",
    "SpeechSession",
    "SpeechTextFilter",
    "clean_for_speech",
    "open_session",
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'strands_kokoro' has no attribute {name!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if name == "KokoroSpeech":
            raise ImportError(
                f"KokoroSpeech needs Strands: install the 'agent' extra (strands-kokoro[agent]); {exc}"
            ) from exc
        raise
    value = getattr(module, name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
