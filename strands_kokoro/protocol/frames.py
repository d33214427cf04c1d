"""The server's frames: every message a model server sends a client, as typed dataclasses.

Each frame is built with ``to_wire()`` (a JSON text frame) or ``to_dict()`` (inside SSE or an HTTP
body); audio travels as binary frames (:class:`AudioData`). Reading them back is
:mod:`strands_kokoro.protocol.frame_parsing`'s.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from strands_kokoro.protocol.audio_formats import AUDIO_FORMAT, CHANNELS, DEFAULT_SAMPLE_RATE
from strands_kokoro.protocol.json_wire import JsonMessage


@dataclass(frozen=True, slots=True)
class SessionStarted(JsonMessage):
    """The server's first frame on a session: which engine speaks, how soon a sentence's first audio
    comes whatever its length (``first_audio_ms``; None when it grows with the length), and how fast it
    synthesizes (``rtf``: seconds of work per second of audio), both measured by the server at warm-up.
    A client that knows a whole sentence starts about as fast as a phrase does not cut sentences for
    latency. A frame added after the first release: older clients ignore it (unknown types are skipped)."""

    engine: str
    first_audio_ms: float | None = None
    rtf: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "session_start",
            "engine": self.engine,
            "first_audio_ms": None if self.first_audio_ms is None else round(self.first_audio_ms, 1),
            "rtf": None if self.rtf is None else round(self.rtf, 4),
        }


@dataclass(frozen=True, slots=True)
class SynthesisStarted(JsonMessage):
    """The audio frames that follow belong to ``request_id`` (until its ``synthesis_complete``).

    ``format``: what those frames are (``pcm_s16le``, ``opus``, ``mp3``: :data:`WIRE_AUDIO_FORMATS`);
    ``sample_rate`` is the PCM's rate, encoded or not.
    """

    request_id: str
    sample_rate: int = DEFAULT_SAMPLE_RATE
    channels: int = CHANNELS
    format: str = AUDIO_FORMAT

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "synthesis_start",
            "request_id": self.request_id,
            "format": self.format,
            "sample_rate": self.sample_rate,
            "channels": self.channels,
        }


@dataclass(frozen=True, slots=True)
class Word:
    """When a word is heard: milliseconds from the start of its request's audio (as the client gets it)."""

    text: str
    start_ms: float
    end_ms: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "start_ms": round(self.start_ms, 1), "end_ms": round(self.end_ms, 1)}


@dataclass(frozen=True, slots=True)
class SynthesisCompleted(JsonMessage):
    """All of a request's audio was sent; ``first_audio_ms`` and ``elapsed_ms`` count from its arrival.

    ``words``: when each word is heard in the request's audio (after the server's trimming and
    resampling), from the model's own durations; empty when the engine cannot tell. A field added
    after the first release: older clients ignore it.
    """

    request_id: str
    audio_ms: float
    chunks: int
    first_audio_ms: float | None
    elapsed_ms: float
    words: tuple[Word, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "synthesis_complete",
            "request_id": self.request_id,
            "audio_ms": round(self.audio_ms, 3),
            "chunks": self.chunks,
            "first_audio_ms": None if self.first_audio_ms is None else round(self.first_audio_ms, 3),
            "elapsed_ms": round(self.elapsed_ms, 3),
            "words": [word.to_dict() for word in self.words],
        }


@dataclass(frozen=True, slots=True)
class WordTimings(JsonMessage):
    """More of a request's words, timed as soon as the engine has rendered them (ms from the start of
    the request's audio, as in ``synthesis_complete``), sent before the audio that holds them.

    Why: a request is spoken while it is still being synthesized, so captions that waited for
    ``synthesis_complete`` would miss the first words of every long request. Each frame carries only
    words not sent before; ``synthesis_complete`` still carries them all. A frame added after the first
    release: older clients ignore it (unknown types are skipped).
    """

    request_id: str
    words: tuple[Word, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "word_timings",
            "request_id": self.request_id,
            "words": [word.to_dict() for word in self.words],
        }


@dataclass(frozen=True, slots=True)
class ServerError(JsonMessage):
    """An ``error`` frame: the server refused or failed one request (or message); the session goes on."""

    request_id: str | None
    code: str
    message: str
    # Set only on a refusal that asking again later can cure (``overloaded``): how long to wait first.
    retry_after_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        frame: dict[str, Any] = {
            "type": "error",
            "request_id": self.request_id,
            "code": self.code,
            "message": self.message,
        }
        if self.retry_after_ms is not None:
            frame["retry_after_ms"] = self.retry_after_ms
        return frame


@dataclass(frozen=True, slots=True)
class Cancelled(JsonMessage):
    """The answer to ``cancel``: how many accepted requests it dropped.

    Every ``cancel`` the server reads gets exactly one ``cancelled``, in the order the cancels were sent
    (also one that drops nothing, and one sent after ``close``); a burst of cancels is never answered
    once for all. A cancel goes unanswered only when the session ends first: the client disconnected, or
    the server closed it for not reading (``error_flood``).
    """

    dropped: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": "cancelled", "dropped": self.dropped}


@dataclass(frozen=True, slots=True)
class AudioData:
    """PCM s16le mono of ``request_id``: a binary frame on the WebSocket, an ``audio`` event in SSE."""

    request_id: str
    pcm: bytes

    def to_dict(self, *, seq: int, sample_rate: int) -> dict[str, Any]:
        """The SSE form: base64 inside JSON (+33% payload, the price of a browser-readable stream)."""
        return {
            "type": "audio",
            "request_id": self.request_id,
            "seq": seq,
            "audio": base64.b64encode(self.pcm).decode("ascii"),
            "format": AUDIO_FORMAT,
            "sample_rate": sample_rate,
            "channels": CHANNELS,
        }


ControlFrame = SessionStarted | SynthesisStarted | WordTimings | SynthesisCompleted | ServerError | Cancelled
ServerMessage = ControlFrame | AudioData
