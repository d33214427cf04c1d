"""The JSON lines CloudWatch turns into the endpoint's metrics (cdk.stacks.observability reads them)."""

from __future__ import annotations

import io
import json
import logging

from tts_container.reporting.metric_lines import log_load


def test_the_load_line_is_one_json_object_with_the_utilization_of_the_measured_capacity() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    lines = logging.getLogger("tts_container.reporting.metric_lines")
    lines.addHandler(handler)
    lines.setLevel(logging.INFO)
    try:
        log_load(speaking=3, capacity_listeners=4)
    finally:
        lines.removeHandler(handler)
    (line,) = stream.getvalue().splitlines()
    assert json.loads(line) == {
        "event": "listener_load",
        "listeners": 3,
        "capacity_listeners": 4,
        "utilization": 0.75,
    }
