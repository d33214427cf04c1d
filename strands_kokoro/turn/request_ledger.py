"""The requests of one spoken turn, each one's whole life in one place: what it asks, when and on which
connection it was sent, what the server refused, what came back, and when that may go out.

Nothing else keeps a list of requests: the pacer reads ``pending`` here, the audio side records sends
(:meth:`RequestLedger.sent`) and replies (:meth:`RequestLedger.put`), and the ledger releases replies in
the order the requests were made to the turn's one ``release`` callback. A request's state changes only
through the ledger's named transitions. Reconnect rule: a completed request is never re-sent; one cut
mid-audio is re-sent whole and its first ``emitted_bytes`` (and ``timed_words``) are dropped, which
lines up because the server renders a request deterministically (architecture §9, "The turn").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from strands_kokoro.protocol import DEFAULT_SAMPLE_RATE, SynthesizeRequest, Word, audio_ms
from strands_kokoro.speech_options import SpeechOptions

__all__ = [
    "AudioReply",
    "CompletedReply",
    "FailedReply",
    "Reply",
    "RequestLedger",
    "TurnRequest",
    "WordsReply",
]


@dataclass(frozen=True, slots=True)
class AudioReply:
    """Audio of the request the listener has not had yet."""

    pcm: bytes


@dataclass(frozen=True, slots=True)
class WordsReply:
    """More of the request's words, timed by the server (out ahead of the audio holding them)."""

    words: tuple[Word, ...]


@dataclass(frozen=True, slots=True)
class CompletedReply:
    """The request was spoken whole; its last reply."""

    words: tuple[Word, ...]


@dataclass(frozen=True, slots=True)
class FailedReply:
    """The server refused or failed the request; its last reply."""

    code: str
    message: str


Reply = AudioReply | WordsReply | CompletedReply | FailedReply


@dataclass(eq=False, slots=True)
class _Progress:
    """Where a request is; written by its :class:`RequestLedger` only."""

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
    held: list[Reply] = field(default_factory=list)  # replies waiting for an earlier request's
    done: bool = False  # its last reply is in: the requests behind it may go out


@dataclass(frozen=True, eq=False)
class TurnRequest:
    """One request of the turn: a pacer piece or a part of the whole answer (``answer``), or a filler.

    What it asks is fixed when it is made. Where it is (sent, refused, heard, done) is read here and
    changes only through the named transitions of the :class:`RequestLedger` that made it."""

    index: int
    wire: SynthesizeRequest  # what is sent, and sent again after a reconnect
    answer: bool = True  # the answer's own text (the engine is measured on it), not a tool filler
    predicted_audio_ms: float = 0.0
    predicted_buffer_ms: float | None = None
    _at: _Progress = field(default_factory=_Progress, repr=False)

    @property
    def request_id(self) -> str:
        return str(self.wire.request_id)

    @property
    def text(self) -> str:
        return self.wire.text

    @property
    def sent_at(self) -> float | None:
        """When it last went on the wire (ms of the turn; ``None``: not yet)."""
        return self._at.sent_at

    @property
    def sample_rate(self) -> int:
        return self._at.sample_rate

    @property
    def received_ms(self) -> float:
        """Audio received in the current attempt."""
        return audio_ms(self._at.received_bytes, self._at.sample_rate)

    @property
    def heard_ms(self) -> float:
        """Audio handed to the listener, across every attempt."""
        return audio_ms(self._at.emitted_bytes, self._at.sample_rate)

    @property
    def refusals(self) -> int:
        """``overloaded`` answers so far."""
        return self._at.refusals

    @property
    def first_refused_at(self) -> float | None:
        """When it was first refused (ms of the turn): the start of its wait budget."""
        return self._at.first_refused_at

    @property
    def first_audio_ms(self) -> float | None:
        """When its first audio reached the listener (ms of the turn)."""
        return self._at.first_audio_ms

    @property
    def buffer_ms(self) -> float | None:
        """The audio the listener had left when its first audio reached them."""
        return self._at.buffer_ms


class RequestLedger:
    """The turn's requests: those the server still owes something (``pending``, in the order sent) and
    those whose replies are not all out yet (released in the order made).

    It is the one writer of its requests' state; each change is one of its transitions: :meth:`new`,
    :meth:`sent`, :meth:`started`, :meth:`refused`, :meth:`audio`, :meth:`words`, :meth:`heard`,
    :meth:`settle`, :meth:`finish` and :meth:`clear`."""

    def __init__(
        self, turn_id: str, options: SpeechOptions, release: Callable[[TurnRequest, Reply], None]
    ) -> None:
        self._turn_id = turn_id
        self._options = options
        self._release = release
        self._pending: list[TurnRequest] = []
        self._by_id: dict[str, TurnRequest] = {}
        self._unreleased: deque[TurnRequest] = deque()
        self._count = 0

    @property
    def pending(self) -> Sequence[TurnRequest]:
        """The requests the server still owes something, in the order sent."""
        return self._pending

    @property
    def count(self) -> int:
        """The requests the turn has made."""
        return self._count

    def new(
        self,
        text: str,
        *,
        previous: str | None = None,
        following: str | None = None,
        answer: bool = True,
        predicted_audio_ms: float = 0.0,
        predicted_buffer_ms: float | None = None,
    ) -> TurnRequest:
        """A new request of the turn, pending and last in the release order (sent by the audio side)."""
        o, index = self._options, self._count
        request_id = f"{self._turn_id}-{index}"
        wire = SynthesizeRequest(
            text, request_id, o.voice, o.speed, o.sample_rate, o.lang, previous, following, lexicon=o.lexicon
        )
        request = TurnRequest(
            index,
            wire,
            answer=answer,
            predicted_audio_ms=predicted_audio_ms,
            predicted_buffer_ms=predicted_buffer_ms,
        )
        self._pending.append(request)
        self._by_id[request.request_id] = request
        self._unreleased.append(request)
        self._count += 1
        return request

    def get(self, request_id: str | None) -> TurnRequest | None:
        """A pending request by id (None: not one of ours, or it owes nothing more)."""
        return self._by_id.get(request_id) if request_id is not None else None

    def unsent(self, generation: int) -> list[TurnRequest]:
        """Pending requests not (yet, or no longer) on connection ``generation``'s wire, in order."""
        return [request for request in self._pending if request._at.sent_on != generation]

    def in_flight(self) -> list[TurnRequest]:
        """The answer's pending requests (what the pacer schedules around; fillers are not its own)."""
        return [request for request in self._pending if request.answer]

    def earlier_pending(self, index: int) -> bool:
        """Does any request made before request ``index`` still owe audio?"""
        return any(request.index < index for request in self._pending)

    def audio_under_way(self) -> bool:
        """Has any pending request's audio begun (received in this attempt, or heard before a drop)?"""
        return any(r._at.received_bytes or r._at.emitted_bytes for r in self._pending)

    # -------------------------------------------------------------------------------- transitions

    def sent(self, request: TurnRequest, generation: int, now: float) -> None:
        """The request went on the wire of connection ``generation``; its audio starts over."""
        at = request._at
        at.sent_on, at.sent_at = generation, now
        _restart(at)

    def started(self, request_id: str | None, sample_rate: int) -> TurnRequest | None:
        """The server began a pending request (``synthesis_start``) at ``sample_rate``: what it receives
        starts over. Returns the request (None: not one of ours)."""
        if (request := self.get(request_id)) is not None:
            _restart(request._at)
            request._at.sample_rate = sample_rate
        return request

    def refused(self, request: TurnRequest, now: float) -> None:
        """The server refused the request as ``overloaded``: it waits to be sent again; the first
        refusal starts its wait budget."""
        at = request._at
        at.refusals += 1
        at.sent_on = -1
        if at.first_refused_at is None:
            at.first_refused_at = now

    def heard(self, request: TurnRequest, now: float, buffer_ms: float | None) -> None:
        """Audio of the request reached the listener at ``now`` with ``buffer_ms`` left before it: the
        first time is the request's first audio."""
        at = request._at
        if at.first_audio_ms is None:
            at.first_audio_ms, at.buffer_ms = now, buffer_ms

    def settle(self, request_id: str | None) -> TurnRequest | None:
        """The request owes no more audio (it completed or failed): it is no longer pending."""
        request = self._by_id.pop(request_id, None) if request_id is not None else None
        if request is not None:
            self._pending.remove(request)
        return request

    # ------------------------------------------------------------------------------------ release

    def audio(self, request_id: str | None, pcm: bytes) -> None:
        """Audio of a pending request: what the listener has not had of it goes out in its place (nothing
        while a re-sent request passes over audio spoken before a drop)."""
        if (request := self.get(request_id)) is not None and (fresh := _fresh_audio(request._at, pcm)):
            self.put(request, AudioReply(fresh))

    def words(self, request_id: str | None, words: tuple[Word, ...]) -> None:
        """Word timings of a pending request: those the listener has not had go out in its place."""
        if (request := self.get(request_id)) is not None and (fresh := _fresh_words(request._at, words)):
            self.put(request, WordsReply(fresh))

    def put(self, request: TurnRequest, reply: Reply) -> None:
        """A reply of ``request``: out now if every request made before it is out, else held until then."""
        if self._unreleased and self._unreleased[0] is request:
            self._release(request, reply)
        elif not request._at.done and request in self._unreleased:
            request._at.held.append(reply)

    def finish(self, request: TurnRequest, last: Reply | None = None) -> None:
        """The request's last reply (``None``: nothing more to say): the requests behind it may go out."""
        if last is not None:
            self.put(request, last)
        request._at.done = True
        while self._unreleased and self._unreleased[0]._at.done:
            self._unreleased.popleft()
            if self._unreleased:
                head = self._unreleased[0]._at
                held, head.held = head.held, []
                for reply in held:
                    self._release(self._unreleased[0], reply)

    def clear(self) -> int:
        """Speech is over for the turn (interrupted, or failed): every request still owed is forgotten
        and nothing not yet out goes out. Returns how many requests were still owed audio."""
        dropped = len(self._pending)
        self._pending = []
        self._by_id.clear()
        for request in self._unreleased:
            request._at.held.clear()
        self._unreleased.clear()
        return dropped


def _restart(at: _Progress) -> None:
    """A new attempt at a request begins (re-sent, or its ``synthesis_start`` came): what it receives
    starts over; what the listener had is kept (``emitted_bytes``, ``timed_words``)."""
    at.received_bytes = at.received_words = 0


def _fresh_audio(at: _Progress, pcm: bytes) -> bytes:
    """What of this frame the listener has not had yet: empty while a re-sent request is still passing
    over audio spoken before the drop, the rest of the frame at the seam, then all of it."""
    start = at.received_bytes
    at.received_bytes += len(pcm)
    fresh = pcm[max(0, at.emitted_bytes - start) :]
    at.emitted_bytes += len(fresh)
    return fresh


def _fresh_words(at: _Progress, words: tuple[Word, ...]) -> tuple[Word, ...]:
    """What of these word timings the listener has not had yet (the same rule as the audio's)."""
    start = at.received_words
    at.received_words += len(words)
    fresh = words[max(0, at.timed_words - start) :]
    at.timed_words += len(fresh)
    return fresh
