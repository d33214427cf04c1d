"""Where the agent's text is cut into speech requests: whole sentences, a cut only when the listener waits.

:class:`SpeechPacer` reads the chunker's sentences (as offsets), the listener's buffer, the engine's
speed (:mod:`strands_kokoro.pacing.engine_speed`) and the requests in flight as the turn's ledger sees
them. A complete sentence goes whole (at most :data:`MAX_IN_FLIGHT` in flight); one still being written
is cut only when the listener would otherwise wait, leaving written words after the cut as context
(:mod:`strands_kokoro.pacing.cut_points`); a server that does not stream gets a short first phrase.
Every cut carries the words around it. Synchronous and deterministic: every method takes ``now``
(milliseconds on any clock). The rules and their reasons: architecture §5 and §9, "Pacing".
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from strands_kokoro.pacing.cut_points import MIN_WORDS, Word, first_phrase, longest_prefix, words_of
from strands_kokoro.pacing.engine_speed import EngineSpeed
from strands_kokoro.pacing.writing_speed import WritingSpeed
from strands_kokoro.protocol import CONTEXT_WORDS_AFTER
from strands_kokoro.text.chunker import Sentence

__all__ = ["InFlight", "Piece", "SpeechPacer"]

# A streaming server starts a whole sentence about as fast as a phrase, so the first request waits this
# long for the first sentence to be written before it is cut (a small LLM writes one in less).
FIRST_SENTENCE_WAIT_MS = 600.0
# A sentence being written is cut once its audio, if it waited for the rest of the sentence
# (:class:`~strands_kokoro.pacing.writing_speed.WritingSpeed` says when), would leave the listener less than
# twice the time between two writes of the LLM, within these bounds: the pacer decides only as text
# arrives. A cut must also bring the audio at least the smaller bound sooner.
MIN_CUT_MARGIN_MS = 100.0
MAX_CUT_MARGIN_MS = 400.0
CONTEXT_CHARS = 300  # ``previous_text``: at most this much of the sentence before a piece
# Requests in flight: one being synthesized and one queued behind it.
MAX_IN_FLIGHT = 2
# Before the first measurement the engine's speed is a guess: one request at a time until it is known.
MAX_IN_FLIGHT_UNMEASURED = 1
# When the text must be handed over at once (a tool is about to run): still below the server's queue
# limit (``protocol.MAX_QUEUED_REQUESTS``), so a well-behaved client is never refused.
MAX_IN_FLIGHT_URGENT = 16
# A non-streaming engine may always take this long, even with nothing buffered (a restart phrase).
RESTART_SYNTHESIS_MS = 300.0


class InFlight(Protocol):
    """A request the server still owes audio, as the turn's ledger keeps it."""

    @property
    def predicted_audio_ms(self) -> float: ...

    @property
    def received_ms(self) -> float: ...

    @property
    def sent_at(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class Piece:
    """One request's text, where it lies in the turn's text, its context, and what the pacer predicted."""

    id: int
    text: str
    start: int
    end: int
    previous_text: str | None
    next_text: str | None
    predicted_audio_ms: float
    # The audio the listener is expected to have left when this piece's audio arrives (None: the first).
    predicted_buffer_ms: float | None
    whole_sentence: bool


class SpeechPacer:
    """Cuts one turn's speakable text into requests, from the text, the listener's buffer and the engine."""

    def __init__(self, *, speed: EngineSpeed | None = None) -> None:
        self.speed = speed or EngineSpeed()
        self._complete: deque[Sentence] = deque()  # sentences not yet fully handed out, in order
        self._pending = Sentence("", 0)  # the settled part of the sentence being written
        self._sent = 0  # text before this offset was handed out
        self._next_id = 0
        self.writing = WritingSpeed()
        self._last_complete_at: float | None = None
        self._play_end: float | None = None  # when the audio received so far will have finished playing
        self.stall_ms = 0.0  # gaps the simulated listener has had so far

    # ------------------------------------------------------------------------------------ text side

    def write(self, sentences: Sequence[Sentence], pending: Sentence, now: float) -> None:
        """The chunker's newly completed sentences and the settled part of the one being written."""
        self._complete.extend(s for s in sentences if s.end > self._sent)
        self._pending = pending
        self.writing.wrote(sentences, pending, now)

    @property
    def unsent(self) -> bool:
        """Is there text that still has to be sent?"""
        return bool(self._complete) or self._pending.end > max(self._sent, self._pending.start)

    def drop_all(self) -> None:
        """Barge-in or failure: forget the text not yet sent."""
        self._complete.clear()
        self._sent = max(self._sent, self._pending.end)
        self._pending = Sentence("", self._sent)

    # ------------------------------------------------------------------------------- listener side

    def audio(self, audio_ms: float, now: float) -> float | None:
        """Audio went to the listener: the audio the listener had left when it came (ms; negative: it
        came after a gap that long; None: nothing had played yet)."""
        buffered = None if self._play_end is None else self._play_end - now
        if self._play_end is None or self._play_end < now:
            if self._play_end is not None:
                self.stall_ms += now - self._play_end
            self._play_end = now
        self._play_end += audio_ms
        return buffered

    def completed(
        self, *, chars: int, audio_ms: float, first_audio_ms: float | None, sent_at: float | None, now: float
    ) -> None:
        """A request's ``synthesis_complete`` arrived: measure the engine on it (a request that is not a
        piece, a tool filler, passes ``chars=0``: it still kept the server busy until now)."""
        if sent_at is not None and chars > 0:
            started = sent_at if self._last_complete_at is None else max(sent_at, self._last_complete_at)
            self.speed.observe(
                chars=chars,
                audio_ms=audio_ms,
                service_ms=max(0.0, now - started),
                first_audio_ms=first_audio_ms,
            )
        self._last_complete_at = now

    @property
    def play_end_ms(self) -> float | None:
        """When the audio received so far will have finished playing (None: nothing played yet)."""
        return self._play_end

    # ----------------------------------------------------------------------------------- decisions

    def next_piece(self, now: float, in_flight: Sequence[InFlight], *, urgent: bool = False) -> Piece | None:
        """The next request to send now, or None to wait (for text, or for a request to complete).

        ``urgent``: hand over every settled sentence now (a tool is about to run; the text before it
        must be spoken before it), below the server's queue limit.
        """
        limit = MAX_IN_FLIGHT_URGENT if urgent else self._in_flight_limit()
        if len(in_flight) >= limit or not self.unsent:
            return None
        sentence, complete = self._region()
        start, rest = self._rest(sentence)
        words = words_of(rest, start, complete=complete)
        if not words:
            return None
        end = self._cut(sentence, complete, words, now, in_flight, urgent)
        if end is None:
            return None
        return self._hand_out(sentence, end, complete, now, in_flight)

    def _in_flight_limit(self) -> int:
        known = self.speed.rtf is not None or self.speed.streaming  # measured, or its latency advertised
        return MAX_IN_FLIGHT if known else MAX_IN_FLIGHT_UNMEASURED

    def _region(self) -> tuple[Sentence, bool]:
        """The sentence the next piece is cut from (complete, or the one being written)."""
        while self._complete and self._complete[0].end <= self._sent:
            self._complete.popleft()
        if self._complete:
            return self._complete[0], True
        return self._pending, False

    def _rest(self, sentence: Sentence) -> tuple[int, str]:
        """What of ``sentence`` is not yet handed out: its offset and text (leading spaces skipped)."""
        rest = sentence[max(0, self._sent - sentence.start) :]
        start = sentence.end - len(rest)
        stripped = rest.lstrip()
        return start + len(rest) - len(stripped), stripped

    def _cut(
        self,
        sentence: Sentence,
        complete: bool,
        words: list[Word],
        now: float,
        in_flight: Sequence[InFlight],
        urgent: bool,
    ) -> int | None:
        """Where the next piece ends (an offset), or None to wait for more text or a completion."""
        if complete and (urgent or self.speed.streaming):
            return sentence.end
        if not self.speed.streaming:
            if self._next_id == 0:
                return first_phrase(words, sentence.end, complete=complete)
            return self._within_budget(sentence, complete, words, now, in_flight)
        if not self._listener_waits(now, in_flight):
            return None
        return longest_prefix(words, math.inf, complete=False)

    def _listener_waits(self, now: float, in_flight: Sequence[InFlight]) -> bool:
        """Would the listener hear a gap if this sentence's audio waited for the rest of it?"""
        if self._next_id == 0:
            return self.writing.waited_ms(now) >= FIRST_SENTENCE_WAIT_MS
        free_at, play_end = self._schedule(now, in_flight)
        if play_end is None:
            return True
        complete_at = self.writing.sentence_done_at(self._pending, now, ms_per_char=self.speed.ms_per_char)
        # A cut helps only where the text, not the server, is what the listener would wait for; it is
        # made while the next decision (the next text, a while away) could still be in time.
        cut_arrival = max(now, free_at) + self.speed.first_audio_for(0)
        wait_arrival = max(complete_at, free_at) + self.speed.first_audio_for(0)
        margin = min(MAX_CUT_MARGIN_MS, max(MIN_CUT_MARGIN_MS, 2 * self.writing.write_gap_ms))
        return wait_arrival + margin >= play_end and wait_arrival - cut_arrival >= MIN_CUT_MARGIN_MS

    def _within_budget(
        self,
        sentence: Sentence,
        complete: bool,
        words: list[Word],
        now: float,
        in_flight: Sequence[InFlight],
    ) -> int | None:
        """A non-streaming server: the longest piece whose synthesis ends before the listener runs dry."""
        free_at, play_end = self._schedule(now, in_flight)
        window = 0.0 if play_end is None else play_end - max(now, free_at)
        audio_ms = self.speed.audio_for_synthesis_ms(max(window, RESTART_SYNTHESIS_MS))
        budget = audio_ms / self.speed.ms_per_char
        if sentence.end - words[0].start <= budget:
            return sentence.end if complete else None
        cut = longest_prefix(words, budget, complete=complete)
        if cut is None and complete:  # even the shortest piece overruns: the shortest arrives first
            return words[MIN_WORDS - 1].end if len(words) > MIN_WORDS else sentence.end
        return cut

    def _schedule(
        self, now: float, in_flight: Sequence[InFlight], *, margin: bool = True
    ) -> tuple[float, float | None]:
        """Predicted (when the server is free, when the listener's audio runs out) for what is in flight."""
        play_end = self._play_end if self._play_end is not None and self._play_end >= now else None
        free_at = now
        for arrival, finish, remaining in self._predicted(now, in_flight, margin=margin):
            free_at = finish
            play_end = (arrival if play_end is None else max(play_end, arrival)) + remaining
        return free_at, play_end

    def _predicted(
        self, now: float, in_flight: Sequence[InFlight], *, margin: bool = True
    ) -> list[tuple[float, float, float]]:
        """(audio from, synthesis done, audio still to come) of each request in flight, in server order.

        The first one is being synthesized since it was sent or since the one before it completed; one
        that is late is predicted to finish now. Each later one starts when the one before ends. Its
        audio plays from its first window on when the server streams ahead of playback, else (to be
        safe) from when it is done.
        """
        free_at = -math.inf if self._last_complete_at is None else self._last_complete_at
        out = []
        for index, request in enumerate(in_flight):
            started = max(now if request.sent_at is None else request.sent_at, free_at)
            arrival = started + self.speed.first_audio_for(request.predicted_audio_ms, margin=margin)
            # Done once all of it is synthesized, and not before its first audio (a short request on a
            # streaming server takes its prosody and first window however little there is).
            synthesized = started + self.speed.synthesis_ms(request.predicted_audio_ms, margin=margin)
            free_at = max(synthesized, arrival)
            if index == 0:
                free_at = max(free_at, now)
            # Before the first measurement a streaming server is taken at its word.
            ahead = self.speed.streams_ahead or (self.speed.streaming and self.speed.rtf is None)
            if request.received_ms > 0 or not ahead:
                arrival = free_at
            out.append(
                (max(arrival, now), free_at, max(0.0, request.predicted_audio_ms - request.received_ms))
            )
        return out

    def _hand_out(
        self, sentence: Sentence, end: int, complete: bool, now: float, in_flight: Sequence[InFlight]
    ) -> Piece:
        start, rest = self._rest(sentence)
        text = rest[: end - start].rstrip()
        before = sentence[: max(0, start - sentence.start)].rstrip()
        # Written words after the cut, as many as the server renders with (in a sentence still being
        # written the last one may be cut short).
        after = sentence[end - sentence.start :].split()
        after = (after if complete else after[:-1])[:CONTEXT_WORDS_AFTER]
        predicted_audio = self.speed.predict_audio_ms(len(text))
        # Reported as the expected outcome (no planning margin), to compare with what happens.
        free_at, play_end = self._schedule(now, in_flight, margin=False)
        arrival = max(now, free_at) + self.speed.first_audio_for(predicted_audio, margin=False)
        piece = Piece(
            self._next_id,
            text,
            start,
            start + len(text),
            before[-CONTEXT_CHARS:] or None,
            " ".join(after) or None,
            predicted_audio,
            None if play_end is None else play_end - arrival,
            complete and end == sentence.end and not before,
        )
        self._next_id += 1
        self._sent = end
        return piece
