"""The ordered event queue of one turn: the one place that numbers events and releases them in order.

Why one place: a request's audio-side events (its ``audio_chunk`` frames, then its ``sentence_complete``
or ``speech_error``) must reach the consumer in request order, although the server may answer out of
order (a request refused as ``overloaded`` and re-sent completes after later ones), and with ``smooth``
pacing nothing may play until the predicted schedule has no gap. So events are kept as what they carry
until they can go out, and each is built exactly once, when it is released: numbered then, timed then,
and told to the pacer's listener clock then (a listener hears audio when it is released, not when it
arrived). Text deltas and turn-level events go out at once.

Audio is encoded here too, as it is released, into the turn's ONE stream in the listener's format
(:mod:`strands_kokoro.audio_encoding`: PCM, Ogg Opus or MP3): one stream per turn, not per request, so
sentences join without a codec's start-up and end padding between them. The pacer, ``audio_ms`` and the
word timings count the PCM; a codec may hold less than a frame (Opus: 20 ms) until the next chunk, and
:meth:`TurnOutput.end_audio` hands out the end of the stream before ``agent_end``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
from strands_kokoro.protocol import Word, audio_ms
from strands_kokoro.request_ledger import TurnRequest

__all__ = ["TurnOutput"]


@dataclass(frozen=True, slots=True)
class _Audio:
    pcm: bytes


@dataclass(frozen=True, slots=True)
class _Timed:
    words: tuple[Word, ...]


@dataclass(frozen=True, slots=True)
class _Complete:
    words: tuple[Word, ...]


@dataclass(frozen=True, slots=True)
class _Failure:
    code: str
    message: str


_Item = _Audio | _Timed | _Complete | _Failure


class TurnOutput:
    """``outbox`` gets the turn's events in order (``None`` ends it); ``clock`` is the turn's ms clock."""

    def __init__(
        self,
        outbox: asyncio.Queue[Event | None],
        clock: Callable[[], float],
        pacer: SpeechPacer,
        *,
        hold_start: bool,
        encoder: AudioEncoder | None = None,
    ) -> None:
        self._outbox = outbox
        self._encoder: AudioEncoder = encoder or PcmEncoder()
        self._last_sentence = 0
        self._clock = clock
        self._pacer = pacer
        self.playing = not hold_start
        self._order: deque[TurnRequest] = deque()  # requests whose events are not all out yet
        self._waiting: dict[TurnRequest, list[_Item]] = {}  # items of requests behind an earlier one
        self._retired: set[TurnRequest] = set()
        self._held: list[tuple[TurnRequest | None, _Item]] = []  # released before playback started
        self.held_ms = 0.0
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

    # ------------------------------------------------------------------------- per-request events

    def track(self, request: TurnRequest) -> None:
        """A new request: its events go out after those of every request made before it."""
        self._order.append(request)

    def audio(self, request: TurnRequest, pcm: bytes) -> None:
        self._put(request, _Audio(pcm))

    def timed(self, request: TurnRequest, words: tuple[Word, ...]) -> None:
        """More of the request's words timed by the server: out in order, ahead of the audio holding them."""
        self._put(request, _Timed(words))

    def completed(self, request: TurnRequest, words: tuple[Word, ...]) -> None:
        self._put(request, _Complete(words))

    def failed(self, request: TurnRequest, code: str, message: str) -> None:
        self._put(request, _Failure(code, message))

    def notice(self, code: str, message: str) -> None:
        """A ``speech_error`` about no request of ours: out now (behind a ``smooth`` hold)."""
        self._release(None, _Failure(code, message))

    def retire(self, request: TurnRequest) -> None:
        """The request owes nothing more: the events of the requests behind it may go out."""
        self._retired.add(request)
        while self._order and self._order[0] in self._retired:
            self._retired.discard(self._order.popleft())
            if self._order:
                for item in self._waiting.pop(self._order[0], []):
                    self._release(self._order[0], item)

    def drop(self) -> None:
        """Barge-in: nothing not yet out goes out."""
        self._order.clear()
        self._waiting.clear()
        self._retired.clear()
        self._held.clear()
        self.held_ms = 0.0

    def _put(self, request: TurnRequest, item: _Item) -> None:
        if self._order and self._order[0] is request:
            self._release(request, item)
        elif request in self._order:
            self._waiting.setdefault(request, []).append(item)

    # ------------------------------------------------------------------------------ smooth start

    def consider_start(self, in_flight: Sequence[TurnRequest], *, finished: bool) -> None:
        """``smooth``: start playback once the predicted schedule has no stall (or nothing more comes)."""
        if self.playing:
            return
        held = self.held_ms > 0 and self._pacer.may_start_playback(self.held_ms, self._clock(), in_flight)
        if finished or held:
            self.start_playback()

    def start_playback(self) -> None:
        """Playback starts now with what was held; its first-audio times count from now."""
        if self.playing:
            return
        self.playing = True
        now = self._clock()
        self._pacer.start_playback(self.held_ms, now)
        held, self._held = self._held, []
        for request, item in held:
            self._deliver(request, item, now, counted=True)
        self.held_ms = 0.0

    def _release(self, request: TurnRequest | None, item: _Item) -> None:
        if self.playing:
            self._deliver(request, item, self._clock(), counted=False)
            return
        self._held.append((request, item))
        if isinstance(item, _Audio) and request is not None:
            self.held_ms += audio_ms(len(item.pcm), request.sample_rate)

    def _deliver(self, request: TurnRequest | None, item: _Item, now: float, *, counted: bool) -> None:
        """Build the event now: number it, time it, and tell the listener clock (unless the held audio
        was already counted when playback started)."""
        if isinstance(item, _Failure) or request is None:
            assert isinstance(item, _Failure)
            self.emit(speech_error(item.code, item.message))
            return
        if isinstance(item, _Audio):
            ms = audio_ms(len(item.pcm), request.sample_rate)
            buffered = None if counted else self._pacer.audio(ms, now)
            self.audio_ms += ms
            if request.first_audio_ms is None:
                request.first_audio_ms, request.buffer_ms = now, buffered
            self._last_sentence = request.index
            self._emit_audio(self._encoder.encode(item.pcm), request.index, request.sample_rate, now)
            return
        if isinstance(item, _Timed):
            self.emit(word_timings(request.index, item.words))
            return
        self.emit(
            sentence_complete(
                request.index,
                request.text,
                audio_ms(request.emitted_bytes, request.sample_rate),
                request.first_audio_ms,
                predicted_buffer_ms=request.predicted_buffer_ms,
                buffer_ms=request.buffer_ms,
                words=item.words,
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
