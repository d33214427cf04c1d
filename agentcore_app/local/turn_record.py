"""What a client saw of one turn: its events, timed on arrival, and the audio they carried.

Every transport (SSE over POST /invocations, the app's ``/ws``, a deployed runtime) fills the same
:class:`TurnRecord`, so the report, the timeline and the playback read one shape.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from strands_kokoro.protocol import AUDIO_FORMAT, AudioFormatName


@dataclass(frozen=True, slots=True)
class TimedEvent:
    """One architecture §4 event and when it reached the client, in ms since the request was sent."""

    at_ms: float
    event: dict[str, Any]


@dataclass(slots=True)
class TurnRecord:
    """Everything a client saw of one turn: the timed events and the audio they carried.

    ``encoded`` is the turn's audio as it came (PCM, or its one Ogg Opus / MP3 stream); ``pcm`` is what
    a listener hears, decoded by :meth:`finish` for a compressed stream. ``wire_bytes``: what the
    transport delivered (SSE body or WebSocket frames), for the transport benchmark.
    """

    mode: str
    events: list[TimedEvent] = field(default_factory=list)
    pcm: bytearray = field(default_factory=bytearray)
    sample_rate: int = 24_000
    audio_format: str = AUDIO_FORMAT
    encoded: bytearray = field(default_factory=bytearray)
    wire_bytes: int = 0
    chunk_bytes: list[int] = field(default_factory=list)  # the audio bytes of each chunk, in order

    def add(self, timed: TimedEvent, audio: bytes | None = None) -> None:
        """One event; ``audio``: its bytes when the transport carried them apart (a binary frame)."""
        self.events.append(timed)
        if timed.event.get("type") == "audio_chunk":
            raw = base64.b64decode(timed.event["audio"]) if audio is None else audio
            self.chunk_bytes.append(len(raw))
            self.audio_format = str(timed.event.get("format", AUDIO_FORMAT))
            self.sample_rate = int(timed.event.get("sample_rate", self.sample_rate))
            if self.audio_format == AUDIO_FORMAT:
                self.pcm += raw
            else:
                self.encoded += raw

    def finish(self) -> TurnRecord:
        """The stream ended: a compressed one is decoded into ``pcm`` (what the listener heard)."""
        if self.encoded and self.audio_format != AUDIO_FORMAT:
            from strands_kokoro.audio_encoding import decode_audio

            fmt: AudioFormatName = "opus" if self.audio_format == "opus" else "mp3"
            self.pcm = bytearray(decode_audio(bytes(self.encoded), fmt, self.sample_rate))
        return self

    def first(self, kind: str) -> TimedEvent | None:
        return next((e for e in self.events if e.event.get("type") == kind), None)

    def of_type(self, kind: str) -> list[TimedEvent]:
        return [e for e in self.events if e.event.get("type") == kind]

    @property
    def text(self) -> str:
        return "".join(e.event["text"] for e in self.of_type("text_delta"))

    @property
    def audio_s(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate

    def summary(self) -> dict[str, Any]:
        """Client-side numbers: first text, first audio, total (ms), audio seconds, chunks, errors."""
        first_text = self.first("text_delta")
        first_audio = self.first("audio_chunk")
        end = self.first("agent_end")
        turn_end = {} if end is None else end.event
        return {
            "mode": self.mode,
            "first_text_ms": None if first_text is None else round(first_text.at_ms, 1),
            "first_audio_ms": None if first_audio is None else round(first_audio.at_ms, 1),
            "total_ms": round(self.events[-1].at_ms, 1) if self.events else None,
            "audio_s": round(self.audio_s, 3),
            "chunks": len(self.of_type("audio_chunk")),
            "sentences": len(self.of_type("sentence_complete")),
            "requests": turn_end.get("requests"),
            "rtf": turn_end.get("rtf"),
            "errors": [e.event for e in self.events if e.event.get("type") in ("error", "speech_error")],
            "text": self.text,
        }
