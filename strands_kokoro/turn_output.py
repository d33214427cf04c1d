"""The events of one turn: the one place that builds, numbers and times them.

Text deltas and turn-level events go out at once. A request's replies come from the request ledger
(:mod:`strands_kokoro.request_ledger`), which releases them in request order; each event is built
exactly once, when it is released: numbered then, timed then, and told to the pacer's listener clock
then (a listener hears audio when it is released, not when it arrived).

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
from strands_kokoro.pacer import SpeechPacer
from strands_kokoro.protocol import audio_ms
from strands_kokoro.request_ledger import AudioReply, FailedReply, Reply, TurnRequest, WordsReply

__all__ = ["TurnOutput"]


class TurnOutput:
    """``outbox`` gets the turn's events in order (``None`` ends it); ``clock`` is the turn's ms clock."""

    def __init__(
        self,
        outbox: asyncio.Queue[Event | None],
        clock: Callable[[], float],
        pacer: SpeechPacer,
        *,
        encoder: AudioEncoder | None = None,
    ) -> None:
        self._outbox = outbox
        self._encoder: AudioEncoder = encoder or PcmEncoder()
        self._last_sentence = 0
        self._clock = clock
        self._pacer = pacer
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

    def release(self, request: TurnRequest, reply: Reply) -> None:
        """A request's reply, in request order (the ledger's): build its event now, number it, time it,
        and tell the listener clock."""
        now = self._clock()
        if isinstance(reply, FailedReply):
            self.emit(speech_error(reply.code, reply.message))
            return
        if isinstance(reply, AudioReply):
            ms = audio_ms(len(reply.pcm), request.sample_rate)
            buffered = self._pacer.audio(ms, now)
            self.audio_ms += ms
            if request.first_audio_ms is None:
                request.first_audio_ms, request.buffer_ms = now, buffered
            self._last_sentence = request.index
            self._emit_audio(self._encoder.encode(reply.pcm), request.index, request.sample_rate, now)
            return
        if isinstance(reply, WordsReply):
            self.emit(word_timings(request.index, reply.words))
            return
        self.emit(
            sentence_complete(
                request.index,
                request.text,
                audio_ms(request.emitted_bytes, request.sample_rate),
                request.first_audio_ms,
                predicted_buffer_ms=request.predicted_buffer_ms,
                buffer_ms=request.buffer_ms,
                words=reply.words,
                filler=not request.answer,
            )
        )

    def _emit_audio(self, payload: bytes, sentence: int, sample_rate: int, now: float) -> None:
        if not payload:  # a codec holding less than a frame: it goes out with the next chunk
            return
        if self.first_audio_ms is None:
            self.first_audio_ms = now
        self.emit(audio_chunk(self.audio_seq, sentence, payload, sample_rate, self._encoder.wire_format))
        self.audio_seq += 1

    def end_audio(self, sample_rate: int) -> None:
        """The turn is over: the end of its compressed stream (what the codec held, Ogg's EOS page)."""
        self._emit_audio(self._encoder.finish(), self._last_sentence, sample_rate, self._clock())
