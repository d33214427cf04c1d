"""The requests of one spoken turn, each one's whole life in one place: what it asks, when it was sent
and on which connection, what the server refused, what audio came back and what the listener had.

The pacer reads its view of the requests in flight from here (``pending``: predicted audio, audio
received, when sent); the turn's session half records every send here (:meth:`RequestLedger.sent`) and
every outcome; nothing else keeps a list of requests.

Reconnect rule (nothing said twice, nothing skipped): a request whose ``synthesis_complete`` arrived is
never re-sent. A request that was cut mid-audio is re-sent whole, and the first ``emitted_bytes`` of its
new audio (and the first ``timed_words`` of its word timings) are dropped: the server renders a request's
prosody deterministically (same text and context, same durations), so the re-synthesized audio lines up
sample for sample and the listener hears it continue where it broke off (at worst a click at the seam).
"""

from __future__ import annotations

from dataclasses import dataclass

from strands_kokoro.protocol import DEFAULT_SAMPLE_RATE, SynthesizeRequest, Word, audio_ms

__all__ = ["RequestLedger", "TurnRequest"]


@dataclass(eq=False, slots=True)
class TurnRequest:
    """One request of the turn: a pacer piece or a part of the whole answer (``answer``), or a filler."""

    index: int
    wire: SynthesizeRequest  # what is sent, and sent again after a reconnect
    answer: bool = True  # the answer's own text (the engine is measured on it), not a tool filler
    predicted_audio_ms: float = 0.0
    predicted_buffer_ms: float | None = None
    sent_on: int = -1  # connection generation it was last sent on (-1: waiting to be sent)
    sent_at: float | None = None  # when it last went on the wire (ms of the turn)
    received_bytes: int = 0  # audio received in the current attempt
    emitted_bytes: int = 0  # audio handed to the listener (kept across reconnects)
    sample_rate: int = DEFAULT_SAMPLE_RATE
    refusals: int = 0  # ``overloaded`` answers so far (the request is re-sent)
    first_refused_at: float | None = None  # when it was first refused (ms of the turn): its wait budget
    first_audio_ms: float | None = None  # when its first audio reached the listener (ms of the turn)
    buffer_ms: float | None = None  # audio the listener had left when that happened
    received_words: int = 0  # word timings received in the current attempt
    timed_words: int = 0  # word timings handed to the listener (kept across reconnects)

    @property
    def request_id(self) -> str:
        return str(self.wire.request_id)

    @property
    def text(self) -> str:
        return self.wire.text

    @property
    def received_ms(self) -> float:
        return audio_ms(self.received_bytes, self.sample_rate)

    def restart(self) -> None:
        """A new attempt at it begins (re-sent, or its ``synthesis_start`` came): what it receives starts
        over; what the listener had is kept (``emitted_bytes``, ``timed_words``)."""
        self.received_bytes = self.received_words = 0

    def fresh_audio(self, pcm: bytes) -> bytes:
        """What of this frame the listener has not had yet: empty while a re-sent request is still
        passing over audio spoken before the drop, the rest of the frame at the seam, then all of it."""
        start = self.received_bytes
        self.received_bytes += len(pcm)
        fresh = pcm[max(0, self.emitted_bytes - start) :]
        self.emitted_bytes += len(fresh)
        return fresh

    def fresh_words(self, words: tuple[Word, ...]) -> tuple[Word, ...]:
        """What of these word timings the listener has not had yet (the same rule as the audio's)."""
        start = self.received_words
        self.received_words += len(words)
        fresh = words[max(0, self.timed_words - start) :]
        self.timed_words += len(fresh)
        return fresh


class RequestLedger:
    """The turn's requests the server still owes something (``pending``, in the order sent)."""

    def __init__(self) -> None:
        self.pending: list[TurnRequest] = []
        self._by_id: dict[str, TurnRequest] = {}
        self.count = 0  # requests the turn has made

    def add(self, request: TurnRequest) -> None:
        self.pending.append(request)
        self._by_id[request.request_id] = request
        self.count += 1

    def get(self, request_id: str | None) -> TurnRequest | None:
        """A pending request by id (None: not one of ours, or it owes nothing more)."""
        return self._by_id.get(request_id) if request_id is not None else None

    def sent(self, request: TurnRequest, generation: int, now: float) -> None:
        """The request went on the wire of connection ``generation``; its audio starts over."""
        request.sent_on, request.sent_at = generation, now
        request.restart()

    def unsent(self, generation: int) -> list[TurnRequest]:
        """Pending requests not (yet, or no longer) on connection ``generation``'s wire, in order."""
        return [request for request in self.pending if request.sent_on != generation]

    def in_flight(self) -> list[TurnRequest]:
        """The answer's pending requests (what the pacer schedules around; fillers are not its own)."""
        return [request for request in self.pending if request.answer]

    def earlier_pending(self, index: int) -> bool:
        """Does any request made before request ``index`` still owe audio?"""
        return any(request.index < index for request in self.pending)

    def settle(self, request_id: str | None) -> TurnRequest | None:
        """The request owes no more audio (it completed or failed): it is no longer pending."""
        request = self._by_id.pop(request_id, None) if request_id is not None else None
        if request is not None:
            self.pending.remove(request)
        return request

    def clear(self) -> list[TurnRequest]:
        """Forget every pending request (speech is over for the turn, or it was interrupted)."""
        dropped, self.pending = self.pending, []
        self._by_id.clear()
        return dropped
