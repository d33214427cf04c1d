"""What flows between a WebSocket session's three tasks (:mod:`tts_container.session`): the accepted
requests (``Job``) and the items of the sender's outbox, each tagged with the epoch it was made in so a
``cancel`` can discard what is stale.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Final

from strands_kokoro.audio_encoding import AudioEncoder, new_encoder
from strands_kokoro.protocol import ControlFrame, ServerError, SynthesizeRequest, Word, WordTimings

__all__ = ["CLOSE", "END", "Control", "Finished", "Job", "QueuedAudio", "Refusal"]


@dataclass(slots=True, eq=False)  # identity hash: a job is a member of the session's open set
class Job:
    """One accepted request and what the sender has written of it so far."""

    request: SynthesizeRequest
    request_id: str
    epoch: int
    received_at: float = field(default_factory=time.perf_counter)
    audio_bytes: int = 0
    chunks: int = 0
    first_audio_at: float | None = None
    words: list[Word] = field(default_factory=list)  # filled by the synthesizer, segment by segment
    words_sent: int = 0  # how many of them went out in ``word_timings`` frames
    encoder: AudioEncoder | None = None  # the request's own stream (Ogg Opus, MP3), made at its first send

    def encoded(self, pcm: bytes) -> bytes:
        """What the sender writes for ``pcm``: the PCM itself, or the next bytes of the request's stream."""
        if self.encoder is None:
            self.encoder = new_encoder(self.request.format, self.request.sample_rate)
        return self.encoder.encode(pcm)

    def unsent_words(self) -> WordTimings | None:
        """The words timed since the last ``word_timings`` frame (None: none), now counted as sent."""
        if len(self.words) <= self.words_sent:
            return None
        frame = WordTimings(self.request_id, tuple(self.words[self.words_sent :]))
        self.words_sent = len(self.words)
        return frame


@dataclass(frozen=True, slots=True)
class Control:
    """A control frame to send. ``epoch`` None: never discarded by a cancel (errors about bad messages)."""

    frame: ControlFrame
    epoch: int | None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused in its place in the request order (its error follows earlier requests' audio)."""

    frame: ServerError
    epoch: int


@dataclass(frozen=True, slots=True)
class QueuedAudio:
    """PCM of a job, made in the epoch of its job (dropped unsent if a cancel came after)."""

    job: Job
    pcm: bytes


@dataclass(frozen=True, slots=True)
class Finished:
    """The end of a job: ``synthesis_complete``, or a coded error when the engine failed."""

    job: Job
    failed: bool = False


CLOSE: Final = object()  # in the request queue: the client's ``close``; the synthesizer ends after the rest
END: Final = object()  # in the outbox: everything before it was sent; the sender closes the socket
