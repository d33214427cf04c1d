"""Which model server a turn's next session goes to, when ``KokoroSpeech`` is given several endpoints.

A turn starts at the endpoint that last served this ``KokoroSpeech`` (at first the first listed). When a
session cannot be opened, or its server refuses the start of an answer as ``overloaded``, the next session
goes to the next endpoint: at once while one of this round is untried; once all failed, after a wait. An
endpoint that serves audio is where the next turn starts. A ``sagemaker:`` endpoint counts as many: a new
session is routed anew (docs/client-retries.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from strands_kokoro.sessions.base import SpeechSession

__all__ = ["EndpointCursor", "EndpointRing", "routes_new_sessions"]

Opener = Callable[[], SpeechSession]


def routes_new_sessions(endpoint: str) -> bool:
    """Does a new session to ``endpoint`` reach whichever server is least loaded (SageMaker bidi)?"""
    return endpoint.partition(":")[0].strip().lower() == "sagemaker"


class EndpointRing:
    """The endpoints of one ``KokoroSpeech``, as session openers, and where the next turn starts."""

    def __init__(self, openers: Sequence[Opener], *, new_session_reroutes: bool = False) -> None:
        if not openers:
            raise ValueError("at least one endpoint is needed")
        self.openers = tuple(openers)
        self.new_session_reroutes = new_session_reroutes
        self.preferred = 0  # the endpoint that last served audio

    def cursor(self) -> EndpointCursor:
        """A turn's own place in the ring, starting at the preferred endpoint."""
        return EndpointCursor(self)


class EndpointCursor:
    """One turn's endpoint: where its session is (``index``) and how much of this round was tried."""

    def __init__(self, ring: EndpointRing) -> None:
        self._ring = ring
        self.index = ring.preferred
        self._tried = 1  # endpoints tried in this round, the current one included

    @property
    def size(self) -> int:
        return len(self._ring.openers)

    @property
    def moves_on_refusal(self) -> bool:
        """Is an ``overloaded`` start of an answer retried on a new session (another endpoint, or a
        SageMaker endpoint that routes it anew) rather than re-sent on the open one?"""
        return self.size > 1 or self._ring.new_session_reroutes

    def open(self) -> SpeechSession:
        """The session (not yet connected) to the current endpoint."""
        return self._ring.openers[self.index]()

    def advance(self) -> bool:
        """Go to the next endpoint. True: it is untried in this round (go at once); False: every endpoint
        failed in this round, which starts over with it (wait first)."""
        self.index = (self.index + 1) % self.size
        if self._tried < self.size:
            self._tried += 1
            return True
        self._tried = 1
        return False

    def served(self) -> None:
        """The current endpoint serves audio: the next turns start here, and the round starts over."""
        self._ring.preferred = self.index
        self._tried = 1
