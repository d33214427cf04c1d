"""What flows between a WebSocket session's three tasks (:mod:`tts_container.routes.session`), and the two
queues that carry it: the accepted requests (``Job``) and the items of the sender's outbox, each tagged
with the epoch it was made in so a ``cancel`` can discard what is stale.

Each queue keeps the counts the session limits (requests waiting, replies unsent, audio bytes queued)
itself, updated as items enter and leave: a count kept beside a queue by hand drifts from it the first
time one path forgets to update it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Final

from strands_kokoro.audio_encoding import AudioEncoder, new_encoder
from strands_kokoro.protocol import ControlFrame, ServerError, SynthesizeRequest, Word, WordTimings

__all__ = ["CLOSE", "END", "Control", "Finished", "Job", "Outbox", "QueuedAudio", "Refusal", "RequestQueue"]


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


class _CountingQueue[T]:
    """An unbounded asyncio queue that tells :meth:`_counted` of every item that enters or leaves it."""

    def __init__(self) -> None:
        self._items: asyncio.Queue[T] = asyncio.Queue()

    def put(self, item: T) -> None:
        self._items.put_nowait(item)
        self._counted(item, 1)

    async def get(self) -> T:
        item = await self._items.get()
        self._counted(item, -1)
        return item

    def drain(self) -> list[T]:
        """Take every item now, in order (the counts go to zero)."""
        items = []
        while not self._items.empty():
            items.append(item := self._items.get_nowait())
            self._counted(item, -1)
        return items

    def _counted(self, item: T, sign: int) -> None:
        raise NotImplementedError


class RequestQueue(_CountingQueue[Job | Refusal | object]):
    """The synthesizer's queue: jobs, refusals answered in their place, and ``CLOSE``."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs = 0  # accepted requests waiting for the synthesizer
        self.refusals = 0  # refusals waiting for their turn to be sent

    def _counted(self, item: Job | Refusal | object, sign: int) -> None:
        if isinstance(item, Job):
            self.jobs += sign
        elif isinstance(item, Refusal):
            self.refusals += sign


class Outbox(_CountingQueue[Control | QueuedAudio | Finished | object]):
    """The sender's queue: control frames, audio, ends of jobs, and ``END``.

    ``replies``: control frames no cancel discards (errors, ``cancelled``) not yet sent; ``audio_bytes``:
    the PCM queued, which :meth:`room_for_audio` waits to fall below a limit.
    """

    def __init__(self) -> None:
        super().__init__()
        self.replies = 0
        self.audio_bytes = 0
        self._audio_left = asyncio.Event()  # set whenever queued audio leaves (sent, or drained)

    def _counted(self, item: Control | QueuedAudio | Finished | object, sign: int) -> None:
        if isinstance(item, Control) and item.epoch is None:
            self.replies += sign
        elif isinstance(item, QueuedAudio):
            self.audio_bytes += sign * len(item.pcm)
            if sign < 0:
                self._audio_left.set()

    async def room_for_audio(self, limit: int) -> None:
        """Wait until less than ``limit`` bytes of audio are queued."""
        while self.audio_bytes >= limit:
            self._audio_left.clear()
            await self._audio_left.wait()
