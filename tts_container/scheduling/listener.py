"""One listener's playback clock, as the server sees it: when its audio runs out.

A listener plays its session's audio back to back from the first byte, so the audio made for it says
when its buffer runs dry (``dry_at``): the deadline of its next engine call
(:class:`~tts_container.scheduling.inference.InferencePool` serves the earliest first); audio made later
is an estimated stall. A request that arrives while its listener plays is due when the audio before it
runs out; one that arrives after is new speech, due :data:`FIRST_AUDIO_TARGET_S` after it arrived
(ahead of listeners with more buffered, behind those about to run dry).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# How soon a request that starts a new stretch of speech wants its first audio.
FIRST_AUDIO_TARGET_S = 0.3
# A request this soon after its listener's audio ran out continues the same answer (the agent was
# still writing its next sentence): it is never refused for capacity.
ANSWER_GAP_S = 1.0

Clock = Callable[[], float]


@dataclass(slots=True, eq=False)  # identity hash: a member of the server's set of listeners
class ListenerClock:
    """The playback state of one listener (a WebSocket session, or one POST's response)."""

    clock: Clock = time.perf_counter
    report: Callable[[Heard], None] | None = None  # told what each piece means to the listener (metrics)
    dry_at: float | None = None  # when the audio made so far has all been played (None: nothing yet)
    requests: set[object] = field(default_factory=set)  # accepted and not yet finished (owned here)
    stalled_s: float = 0.0  # silence heard inside speech so far (estimated)

    def playing(self) -> bool:
        """Whether audio made for the listener is still playing now."""
        return self.dry_at is not None and self.dry_at > self.clock()

    def in_answer(self) -> bool:
        """Whether the listener is inside an answer: a request open, or audio played within
        :data:`ANSWER_GAP_S` (its next request continues the answer rather than starting one)."""
        return bool(self.requests) or (self.dry_at is not None and self.clock() < self.dry_at + ANSWER_GAP_S)

    def stop(self) -> None:
        """The listener stopped hearing what was made for it (a ``cancel``: queued audio is dropped):
        its answer is over, so it holds no place at the server and its next request starts a new
        stretch, due soon (a user who barged in opens the next turn, often on a new session)."""
        self.dry_at = None

    def continues(self, received_at: float) -> bool:
        """Whether a request received at ``received_at`` continues audio that was playing then."""
        return self.dry_at is not None and self.dry_at >= received_at

    def deadline(self, received_at: float, *, started: bool) -> float:
        """When the next piece of a request received at ``received_at`` is needed (``started``: the
        request has made audio already, so its listener is inside it)."""
        if self.dry_at is not None and (started or self.continues(received_at)):
            return self.dry_at
        return received_at + FIRST_AUDIO_TARGET_S

    def made(self, seconds: float, received_at: float, *, started: bool) -> Heard:
        """Count ``seconds`` of audio made now for a request received at ``received_at``: what the
        listener hears of it (a stall it ends, or the first audio of a new stretch)."""
        now = self.clock()
        heard = Heard()
        if started or self.continues(received_at):
            if self.dry_at is not None and self.dry_at < now:
                heard = Heard(stall_s=now - self.dry_at)
        else:
            heard = Heard(first_audio_s=now - received_at)
        self.stalled_s += heard.stall_s
        self.dry_at = max(self.dry_at or now, now) + seconds
        if self.report is not None:
            self.report(heard)
        return heard


@dataclass(frozen=True, slots=True)
class Heard:
    """What a piece of audio means to its listener: the silence it ends inside speech, or (the first
    piece of a new stretch) how long after its request it came."""

    stall_s: float = 0.0
    first_audio_s: float | None = None
