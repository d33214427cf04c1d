"""The events of one turn: the one place that builds, numbers and times them.

Text deltas and turn-level events go out at once; a request's replies as the request ledger releases
them, in request order. Each event is built exactly once, when released. Audio is encoded here into the
turn's one stream in the listener's format (:mod:`strands_kokoro.audio_encoding`), so sentences join
without codec padding between them; the pacer, ``audio_ms`` and word timings count the PCM, and
:meth:`TurnOutput.end_audio` hands out what the codec still holds before ``agent_end``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from strands_kokoro.audio_encoding import AudioEncoder, PcmEncoder
from strands_kokoro.events import (
    Event,
    audio_chunk,
    sentence_complete,
    speech_error,
    text_delta,
    word_timings,
)
from strands_kokoro.turn.request_ledger import CompletedReply, FailedReply, Reply, TurnRequest, WordsReply

__all__ = ["TurnOutput"]


class TurnOutput:
    """``outbox`` gets the turn's events in order (``None`` ends it); ``clock`` is the turn's ms clock."""

    def __init__(
        self,
        outbox: asyncio.Queue[Event | None],
        clock: Callable[[], float],
        *,
        encoder: AudioEncoder | None = None,
    ) -> None:
        self._outbox = outbox
        self._encoder: AudioEncoder = encoder or PcmEncoder()
        self._wire = self._encoder.wire_format
        self._last_sentence = 0
        self._clock = clock
        self.text_seq = 0
        self.audio_seq = 0
        self.first_text_ms: float | None = None
        self.first_audio_ms: float | None = None
        self.audio_ms = 0.0

    def emit(self, event: Event | None) -> None:
        """A turn-level event (or the end of the queue): out at once."""
        self._outbox.put_nowait(event)

    def text(self, text: str) -> None:
        if self.first_text_ms is None:
            self.first_text_ms = self._clock()
        self.emit(text_delta(self.text_seq, text))
        self.text_seq += 1

    def notice(self, code: str, message: str) -> None:
        """A ``speech_error`` about no request of ours: out now."""
        self.emit(speech_error(code, message))

    def audio(self, request: TurnRequest, pcm: bytes, ms: float, now: float) -> None:
        """Audio of a request, released in request order: ``ms`` of it, encoded into the turn's one
        stream."""
        self.audio_ms += ms
        self._last_sentence = request.index
        if payload := self._encoder.encode(pcm):  # empty: a codec holding less than a frame till the next
            self.first_audio_ms = now if self.first_audio_ms is None else self.first_audio_ms
            self.emit(audio_chunk(self.audio_seq, request.index, payload, request.sample_rate, self._wire))
            self.audio_seq += 1

    def reply(self, request: TurnRequest, reply: Reply) -> None:
        """A request's other reply (words, its end, its failure), released in request order."""
        if isinstance(reply, FailedReply):
            self.emit(speech_error(reply.code, reply.message))
            return
        if isinstance(reply, WordsReply):
            self.emit(word_timings(request.index, reply.words))
            return
        if not isinstance(reply, CompletedReply):
            raise TypeError(f"audio goes out through TurnOutput.audio, not {type(reply).__name__}")
        self.emit(
            sentence_complete(
                request.index,
                request.text,
                request.heard_ms,
                request.first_audio_ms,
                predicted_buffer_ms=request.predicted_buffer_ms,
                buffer_ms=request.buffer_ms,
                words=reply.words,
                filler=not request.answer,
            )
        )

    def end_audio(self, sample_rate: int) -> None:
        """The turn is over: the end of its compressed stream (what the codec held, Ogg's EOS page)."""
        if payload := self._encoder.finish():
            self.first_audio_ms = self._clock() if self.first_audio_ms is None else self.first_audio_ms
            self.emit(audio_chunk(self.audio_seq, self._last_sentence, payload, sample_rate, self._wire))
            self.audio_seq += 1
