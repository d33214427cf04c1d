"""The server's own counters of sessions and requests, on both routes, shown on ``/stats`` and
``/metrics``: what tests and operators read to see that nothing leaks (a session left open, a request
neither completed nor cancelled, audio made for nobody)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SessionCounters"]


@dataclass(slots=True)
class SessionCounters:
    """Server-wide session counters, shown on ``/stats``."""

    active: int = 0
    opened: int = 0
    requests_completed: int = 0
    requests_cancelled: int = 0
    # Audio the engine made, and the part of it that reached a client (both routes): the difference is
    # speech made for nobody (cancelled, or its client left), what a hang-up must keep near zero.
    audio_made_ms: float = 0.0
    audio_sent_ms: float = 0.0
    error_floods: int = 0
