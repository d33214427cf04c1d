"""The events of one turn: the one place that builds, numbers and times them.

Text deltas and turn-level events go out at once. A request's replies come from the request ledger
(:mod:`strands_kokoro.turn.request_ledger`), which releases them in request order through the turn (which
tells the pacer's listener clock first: a listener hears audio when it is released, not when it
arrived); each event is built exactly once, when it is released: numbered then, timed then.

Audio is encoded here too, as it is released, into the turn's ONE stream in the listener's format
(:mod:`strands_kokoro.audio_encoding`: PCM, Ogg Opus or MP3): one stream per turn, not per request, so
sentences join without a codec's start-up and end padding between them. The pacer, ``audio_ms`` and the
word timings count the PCM; a codec may hold less than a frame (Opus: 20 ms) until the next chunk, and
:meth:`TurnOutput.end_audio` hands out the end of the stream before ``agent_end``.
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
