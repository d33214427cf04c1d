"""How long a turn waits before asking a model server again that refused a request as ``overloaded``.

A full server refuses the start of a new answer at once (coded ``overloaded``, retryable) and says when
to ask again (``retry_after_ms``). The listener waits in silence meanwhile, so the turn waits within a
bounded budget, counted from the request's first refusal; when the next wait would pass it, speech is
given up for the turn (one ``speech_error``) and the text answer goes on.

- The server's ``retry_after_ms`` is a floor, never shortened: asking sooner is refused again.
- Without one, the wait doubles from ``backoff_s`` with each refusal of the request.
- Every wait is stretched by a random share of up to ``jitter``: listeners refused together (a burst of
  new answers on a full server) come back spread out, not all in the same instant.

Why a small rule and not a retry library: a retry here is not a call that raises and is called again.
The refusal arrives as a frame on the turn's receiving task, the request goes again on the session (in
its place in the order, under the session's send lock), perhaps on another endpoint, and other requests
keep flowing meanwhile. What a library would add is only this arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIN_WAIT_S", "OverloadRetry"]

MIN_WAIT_S = 0.02  # a refusal naming no wait (or 0) is never answered in the same instant


@dataclass(frozen=True, slots=True)
class OverloadRetry:
    """The waits before a refused request is sent again; ``budget_s`` bounds them all together."""

    budget_s: float  # the longest a request waits, from its first refusal (0: never wait)
    backoff_s: float  # the first wait when the server names none
    jitter: float = 0.2  # each wait is stretched by up to this share (spread, never shortened)

    def wait_s(
        self, *, retry_after_ms: int | None, refusals: int, waited_s: float, draw: float
    ) -> float | None:
        """The wait before the next try, or ``None`` when it would pass the budget (give up now).

        ``refusals``: how often the request was refused, this refusal included; ``waited_s``: time since
        its first refusal; ``draw``: a random number in [0, 1) that picks the jitter.
        """
        if retry_after_ms is not None:
            base = retry_after_ms / 1000.0
        else:
            base = self.backoff_s * 2.0 ** max(0, refusals - 1)
        wait = max(MIN_WAIT_S, base) * (1.0 + self.jitter * min(max(draw, 0.0), 1.0))
        if waited_s + wait > self.budget_s:
            return None
        return wait
