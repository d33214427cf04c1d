"""The speech endpoint's observability as synthesized: its alarms, the first-audio metric, the dashboard."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest

from cdk.stacks.observability import LOAD_EVENT, LOAD_LINES_PER_MINUTE, LOAD_LOG_FIELDS
from tests.cdk.synth_support import ENDPOINT, Synthesized, alarms_by_metric, only, template

# A full synth takes 20-60 s, several minutes on a loaded CI machine: more than the default 300 s.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
SAGEMAKER_DIMENSIONS = [
    {"Name": "EndpointName", "Value": "kokoro-82m"},
    {"Name": "VariantName", "Value": "AllTraffic"},
]


@pytest.mark.parametrize(
    ("metric", "namespace", "statistic", "threshold"),
    [
        ("FirstAudioLatency", "StrandsKokoro/kokoro-82m", "p90", 1500),  # ms, from the server's log
        ("Invocation5XXErrors", "AWS/SageMaker", "Sum", 1),
        ("Invocation4XXErrors", "AWS/SageMaker", "Average", 0.05),  # 1 per 4XX, 0 otherwise: a rate
        # the mean share of the measured capacity in use: at 1.0 every server refuses new answers
        ("ListenerUtilization", "StrandsKokoro/kokoro-82m", "Average", 1),
    ],
)
def test_alarms_watch_first_audio_errors_and_saturation(
    synthesized: Synthesized, metric: str, namespace: str, statistic: str, threshold: float
) -> None:
    alarm = alarms_by_metric(template(synthesized, ENDPOINT))[metric]
    assert alarm["Namespace"] == namespace
    assert alarm.get("Statistic", alarm.get("ExtendedStatistic")) == statistic
    assert alarm["Threshold"] == threshold
    assert alarm["TreatMissingData"] == "notBreaching"
    if namespace == "AWS/SageMaker":
        assert alarm["Dimensions"] == SAGEMAKER_DIMENSIONS


def test_no_alarm_on_model_latency_which_may_span_a_whole_session(synthesized: Synthesized) -> None:
    alarms = alarms_by_metric(template(synthesized, ENDPOINT))
    assert set(alarms) == {
        "FirstAudioLatency",
        "Invocation5XXErrors",
        "Invocation4XXErrors",
        "ListenerUtilization",
    }


def test_saturation_is_the_measured_capacity_all_in_use_for_five_minutes(synthesized: Synthesized) -> None:
    alarm = alarms_by_metric(template(synthesized, ENDPOINT))["ListenerUtilization"]
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"  # 1.0 is already a refusal
    assert (alarm["Threshold"], alarm["Period"]) == (1, 60)
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (5, 5)
    assert "Dimensions" not in alarm  # the metric filter publishes none
    assert "scaling target is 0.7" in alarm["AlarmDescription"]


def metric_filters(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    """The endpoint's metric filters by the metric each makes (one transformation each), all on its logs."""
    t = template(synthesized, ENDPOINT)
    group = next(iter(t.find_resources("AWS::Logs::LogGroup")))
    found = {}
    for resource in t.find_resources("AWS::Logs::MetricFilter").values():
        props = resource["Properties"]
        assert props["LogGroupName"] == {"Ref": group}
        (transformation,) = props["MetricTransformations"]
        assert transformation["MetricNamespace"] == "StrandsKokoro/kokoro-82m"
        assert "DefaultValue" not in transformation  # other lines emit nothing, not a made-up value
        found[transformation["MetricName"]] = {"pattern": props["FilterPattern"], **transformation}
    return found


def test_first_audio_metric_comes_from_the_model_servers_log_line(synthesized: Synthesized) -> None:
    first_audio = metric_filters(synthesized)["FirstAudioLatency"]
    assert first_audio["pattern"] == '{ ($.event = "synthesis_complete") && ($.first_audio_ms >= 0) }'
    assert (first_audio["MetricValue"], first_audio["Unit"]) == ("$.first_audio_ms", "Milliseconds")


def test_utilization_and_capacity_come_from_the_model_servers_load_line(synthesized: Synthesized) -> None:
    filters = metric_filters(synthesized)
    assert set(filters) == {"FirstAudioLatency", "ListenerUtilization", "CapacityListeners"}
    utilization, capacity = filters["ListenerUtilization"], filters["CapacityListeners"]
    assert utilization["pattern"] == '{ ($.event = "listener_load") && ($.utilization >= 0) }'
    assert utilization["MetricValue"] == "$.utilization"
    assert "Unit" not in utilization  # a ratio; the scaling policy names no unit either
    assert capacity["pattern"] == '{ ($.event = "listener_load") && ($.capacity_listeners >= 1) }'
    assert (capacity["MetricValue"], capacity["Unit"]) == ("$.capacity_listeners", "Count")


def test_the_model_server_prints_the_load_line_the_filters_read() -> None:
    """The contract across the two packages: the real ``log_load`` line, every 10 s (6 a minute)."""
    from tts_container.reporting.metric_lines import LOAD_INTERVAL_S, log_load

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    lines = logging.getLogger("tts_container.reporting.metric_lines")
    lines.addHandler(handler)
    lines.setLevel(logging.INFO)
    try:
        log_load(speaking=7, capacity_listeners=10)
    finally:
        lines.removeHandler(handler)
    (line,) = stream.getvalue().splitlines()
    event, utilization, capacity = LOAD_LOG_FIELDS
    fields = json.loads(line)
    assert fields[event] == LOAD_EVENT
    assert (fields[utilization], fields[capacity]) == (0.7, 10)
    assert LOAD_LINES_PER_MINUTE == 60 / LOAD_INTERVAL_S


def test_dashboard_shows_the_alarms_utilization_errors_and_scaling_state(synthesized: Synthesized) -> None:
    t = template(synthesized, ENDPOINT)
    dashboard = only(t.find_resources("AWS::CloudWatch::Dashboard"))["Properties"]
    assert dashboard["DashboardName"] == "kokoro-82m-speech"
    parts = dashboard["DashboardBody"]["Fn::Join"][1]
    text = "".join(part for part in parts if isinstance(part, str))
    alarm_arns = {part["Fn::GetAtt"][0] for part in parts if isinstance(part, dict) and "Fn::GetAtt" in part}
    assert alarm_arns == set(t.find_resources("AWS::CloudWatch::Alarm"))
    body = json.loads(text.replace('""', '"x"'))  # the alarm ARNs were tokens between the quotes
    widgets = {w["properties"].get("title"): w["properties"] for w in body["widgets"]}
    utilization = widgets["Listener utilization (share of the measured capacity) vs the scaling target"]
    assert [m[:2] for m in utilization["metrics"]] == [
        ["StrandsKokoro/kokoro-82m", "ListenerUtilization"]
    ] * 2
    assert {a["value"] for a in utilization["annotations"]["horizontal"]} == {0.7, 1}
    capacity = widgets["Listeners one instance admits (its measured capacity)"]
    assert [m[1] for m in capacity["metrics"]] == ["CapacityListeners"] * 2
    # Open sessions stay on the dashboard for reference, with no target drawn: nothing scales on them.
    concurrency = widgets["Concurrent requests per model (open sessions; reference, not scaled on)"]
    assert [m[1] for m in concurrency["metrics"]] == ["ConcurrentRequestsPerModel"] * 2
    assert "annotations" not in concurrency
    errors = widgets["Invocations and errors"]
    assert {m[1] for m in errors["metrics"]} == {"Invocation4XXErrors", "Invocation5XXErrors", "Invocations"}
    scaling = widgets["Instances in service (autoscaling state)"]
    expressions = {m[0]["expression"] for m in scaling["metrics"] if isinstance(m[0], dict)}
    assert expressions == {"invocations / perinstance", "lines / 6"}
    inputs = {m[1]: m[-1]["id"] for m in scaling["metrics"] if isinstance(m[0], str)}
    assert inputs == {
        "Invocations": "invocations",
        "InvocationsPerInstance": "perinstance",
        "CapacityListeners": "lines",
    }
    assert {a["value"] for a in scaling["annotations"]["horizontal"]} == {1, 4}
    first_audio = widgets["Time to first audio per request (model server, ms)"]
    assert {m[0] for m in first_audio["metrics"]} == {"StrandsKokoro/kokoro-82m"}
