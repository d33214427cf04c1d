"""How long a turn waits before asking a model server again that refused a request as ``overloaded``.

The turn waits within a budget counted from the request's first refusal; when the next wait would pass
it, speech is given up for the turn (one ``speech_error``) and the text answer goes on. The server's
``retry_after_ms`` is a floor, never shortened; without one the wait doubles from ``backoff_s``; every
wait is stretched by a random share of up to ``jitter`` so listeners refused together come back spread
out. Why not a retry library: docs/client-retries.md.
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
