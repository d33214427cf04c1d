"""The audio events of an agent turn (DESIGN §4): plain, JSON-serialisable dicts with a ``type``.

These are what ``KokoroSpeech`` yields and what the AgentCore entrypoint puts on its SSE stream. They
are built here, in one place, so the field names (which follow Strands' own bidi audio events) cannot
drift between producers. Strands' raw ``stream_async`` dicts never appear: they carry the agent object.
"""

from __future__ import annotations

import base64
from typing import Any

from strands_kokoro.protocol import AUDIO_FORMAT, CHANNELS

Event = dict[str, Any]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def agent_start(request_id: str, mode: str) -> Event:
    return {"type": "agent_start", "request_id": request_id, "mode": mode}


def text_delta(seq: int, text: str) -> Event:
    return {"type": "text_delta", "seq": seq, "text": text}


def audio_chunk(seq: int, sentence: int, pcm: bytes, sample_rate: int) -> Event:
    """One piece of a sentence's audio; base64 so the dict stays JSON (the +33% is the price of SSE)."""
    return {
        "type": "audio_chunk",
        "seq": seq,
        "sentence": sentence,
        "audio": base64.b64encode(pcm).decode("ascii"),
        "format": AUDIO_FORMAT,
        "sample_rate": sample_rate,
        "channels": CHANNELS,
    }


def sentence_complete(sentence: int, text: str, audio_ms: float, first_audio_ms: float | None) -> Event:
    """A sentence fully spoken; ``first_audio_ms`` is relative to ``agent_start`` (None: no audio)."""
    return {
        "type": "sentence_complete",
        "sentence": sentence,
        "text": text,
        "audio_ms": round(audio_ms, 1),
        "first_audio_ms": _ms(first_audio_ms),
    }


def speech_error(code: str, message: str) -> Event:
    """Speech failed (in part); the text answer goes on."""
    return {"type": "speech_error", "code": code, "message": message}


def speech_interrupted(dropped: int, at_ms: float) -> Event:
    """``interrupt()`` took effect: ``dropped`` sentences will not be (fully) spoken; text goes on."""
    return {"type": "speech_interrupted", "dropped": dropped, "at_ms": round(at_ms, 1)}


def agent_end(
    request_id: str,
    mode: str,
    *,
    first_text_ms: float | None,
    first_audio_ms: float | None,
    total_ms: float,
    audio_ms: float,
    chunks: int,
) -> Event:
    """The turn summary; every time is relative to ``agent_start``."""
    return {
        "type": "agent_end",
        "request_id": request_id,
        "mode": mode,
        "first_text_ms": _ms(first_text_ms),
        "first_audio_ms": _ms(first_audio_ms),
        "total_ms": round(total_ms, 1),
        "audio_ms": round(audio_ms, 1),
        "chunks": chunks,
    }


def error(code: str, message: str) -> Event:
    """The turn itself failed (the agent raised); an ``agent_end`` still follows."""
    return {"type": "error", "code": code, "message": message}
