"""The requests of one spoken turn: what each still owes, the order their events go out in, and the
reconnect rule for their audio.

Reconnect rule (nothing said twice, nothing skipped): a request whose ``synthesis_complete`` arrived is
never re-sent. A request that was cut mid-audio is re-sent whole, and the first ``emitted_bytes`` of its
new audio are dropped: Kokoro's durations are deterministic, so the re-synthesized audio has the same
length and the listener hears it continue where it broke off (at worst a click at the seam).

Order: a request's events go out once every earlier request is done, and wait with it until then
(after an ``overloaded`` re-send the server answers out of order).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from strands_kokoro.events import Event
from strands_kokoro.protocol import DEFAULT_SAMPLE_RATE

__all__ = ["RequestLedger", "TurnRequest"]


@dataclass(eq=False, slots=True)
class TurnRequest:
    """One request of the turn (a pacer piece in bidi, a part of the whole answer in batch)."""

    index: int
    text: str
    request_id: str
    predicted_buffer_ms: float | None = None
    piece_id: int | None = None  # the pacer's piece this request carries (None: not the pacer's)
    buffer_ms: float | None = None  # audio the listener had left when this request's audio began
    sent_on: int = -1  # connection generation it was last sent on
    emitted_bytes: int = 0  # audio already handed to the consumer (kept across reconnects)
    received_bytes: int = 0  # audio received in the current attempt
    sample_rate: int = DEFAULT_SAMPLE_RATE
    first_audio_ms: float | None = None
    refusals: int = 0  # ``overloaded`` answers so far (the request is re-sent)
    done: bool = False  # completed, failed or dropped: owes no more events
    held: list[Event] = field(default_factory=list)  # its events, while an earlier request owes audio

    def fresh_audio(self, pcm: bytes) -> bytes:
        """What of this frame the listener has not had yet: empty while a re-sent request is still
        passing over audio spoken before the drop, the rest of the frame at the seam, then all of it."""
        start = self.received_bytes
        self.received_bytes += len(pcm)
        fresh = pcm[max(0, self.emitted_bytes - start) :]
        self.emitted_bytes += len(fresh)
        return fresh


class RequestLedger:
    """The turn's requests: ``pending`` (sent, or to be sent on connect, and not yet complete, in the
    order sent) and every request whose events are not all out yet, in order."""

    def __init__(self, play: Callable[[Event], None]) -> None:
        self.pending: list[TurnRequest] = []
        self._by_id: dict[str, TurnRequest] = {}
        self._order: deque[TurnRequest] = deque()
        self._play = play

    def add(self, request: TurnRequest) -> None:
        self.pending.append(request)
        self._by_id[request.request_id] = request
        self._order.append(request)

    def get(self, request_id: str | None) -> TurnRequest | None:
        """A pending request by id (None: not one of ours, or it owes no more audio)."""
        return self._by_id.get(request_id) if request_id is not None else None

    def settle(self, request_id: str | None) -> TurnRequest | None:
        """The request owes no more audio (it completed or failed): it is no longer pending."""
        request = self._by_id.pop(request_id, None) if request_id is not None else None
        if request is not None:
            self.pending.remove(request)
        return request

    def deliver(self, request: TurnRequest, event: Event) -> None:
        """A request's event goes out now if every earlier request is done, else waits in order."""
        if self._order and self._order[0] is request:
            self._play(event)
        else:
            request.held.append(event)

    def retire(self, request: TurnRequest) -> None:
        """The request owes nothing more: release what later requests were holding, in order."""
        request.done = True
        while self._order and self._order[0].done:
            self._order.popleft()
            if self._order:
                head = self._order[0]
                for event in head.held:
                    self._play(event)
                head.held.clear()

    def clear(self) -> None:
        """Forget every request (speech is over for the turn, or it was interrupted)."""
        self.pending.clear()
        self._by_id.clear()
        self._order.clear()
