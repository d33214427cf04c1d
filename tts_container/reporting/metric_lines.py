"""JSON lines on stdout that CloudWatch turns into metrics: one per completed request, and one every
:data:`LOAD_INTERVAL_S` with the listeners against the measured capacity (what the endpoint scales on).

SageMaker ships stdout to CloudWatch Logs with no credentials in the container, and a metric filter
(``cdk/stacks/observability.py``) turns the line into a metric. CloudWatch reads a line as JSON only when
the whole line is one object, so these bypass the server's log format. No client data is written.
"""

from __future__ import annotations

import json
import logging
import sys

from strands_kokoro.protocol import SynthesisCompleted

# How often the load line is written: a one-minute metric gets several points, a log group few lines.
LOAD_INTERVAL_S = 10.0

_metrics = logging.getLogger("tts_container.reporting.metric_lines")
_metrics.propagate = False


def configure() -> None:
    """Send the metric lines to stdout as bare JSON (called by the server's entry point)."""
    if not _metrics.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        _metrics.addHandler(handler)
        _metrics.setLevel(logging.INFO)


def log_completed(complete: SynthesisCompleted, *, route: str) -> None:
    """``{"event": "synthesis_complete", "route": ..., "first_audio_ms": ..., ...}`` on one line."""
    if _metrics.isEnabledFor(logging.INFO):
        line = {
            "event": "synthesis_complete",
            "route": route,
            "first_audio_ms": complete.first_audio_ms,
            "audio_ms": round(complete.audio_ms, 1),
            "elapsed_ms": round(complete.elapsed_ms, 1),
        }
        _metrics.info(json.dumps(line))


def log_load(speaking: int, capacity_listeners: int) -> None:
    """``{"event": "listener_load", "listeners": ..., "capacity_listeners": ..., "utilization": ...}``:
    the share of the measured capacity in use (1.0: a new answer is refused)."""
    if _metrics.isEnabledFor(logging.INFO):
        line = {
            "event": "listener_load",
            "listeners": speaking,
            "capacity_listeners": capacity_listeners,
            "utilization": round(speaking / capacity_listeners, 3),
        }
        _metrics.info(json.dumps(line))
