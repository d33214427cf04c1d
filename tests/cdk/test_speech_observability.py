"""The speech endpoint's observability as synthesized: its alarms, the first-audio metric, the dashboard."""

from __future__ import annotations

import json

import pytest

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
        ("ConcurrentRequestsPerModel", "AWS/SageMaker", "Average", 6),  # scaling target 4 x 1.5
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
        "ConcurrentRequestsPerModel",
    }
    assert alarms["ConcurrentRequestsPerModel"]["EvaluationPeriods"] == 5
    assert alarms["ConcurrentRequestsPerModel"]["DatapointsToAlarm"] == 5


def test_first_audio_metric_comes_from_the_model_servers_log_line(synthesized: Synthesized) -> None:
    t = template(synthesized, ENDPOINT)
    metric_filter = only(t.find_resources("AWS::Logs::MetricFilter"))["Properties"]
    group = next(iter(t.find_resources("AWS::Logs::LogGroup")))
    assert metric_filter["LogGroupName"] == {"Ref": group}
    assert metric_filter["FilterPattern"] == '{ ($.event = "synthesis_complete") && ($.first_audio_ms >= 0) }'
    assert metric_filter["MetricTransformations"] == [
        {
            "MetricName": "FirstAudioLatency",
            "MetricNamespace": "StrandsKokoro/kokoro-82m",
            "MetricValue": "$.first_audio_ms",
            "Unit": "Milliseconds",
        }
    ]


def test_dashboard_shows_the_alarms_concurrency_errors_and_scaling_state(synthesized: Synthesized) -> None:
    t = template(synthesized, ENDPOINT)
    dashboard = only(t.find_resources("AWS::CloudWatch::Dashboard"))["Properties"]
    assert dashboard["DashboardName"] == "kokoro-82m-speech"
    parts = dashboard["DashboardBody"]["Fn::Join"][1]
    text = "".join(part for part in parts if isinstance(part, str))
    alarm_arns = {part["Fn::GetAtt"][0] for part in parts if isinstance(part, dict) and "Fn::GetAtt" in part}
    assert alarm_arns == set(t.find_resources("AWS::CloudWatch::Alarm"))
    body = json.loads(text.replace('""', '"x"'))  # the alarm ARNs were tokens between the quotes
    widgets = {w["properties"].get("title"): w["properties"] for w in body["widgets"]}
    concurrency = widgets["Concurrent requests per model vs the scaling target"]
    assert [m[1] for m in concurrency["metrics"]] == ["ConcurrentRequestsPerModel"] * 2
    assert {a["value"] for a in concurrency["annotations"]["horizontal"]} == {4, 6}
    errors = widgets["Invocations and errors"]
    assert {m[1] for m in errors["metrics"]} == {"Invocation4XXErrors", "Invocation5XXErrors", "Invocations"}
    scaling = widgets["Instances in service (autoscaling state)"]
    (expression,) = [m[0] for m in scaling["metrics"] if isinstance(m[0], dict)]
    assert expression["expression"] == "invocations / perinstance"
    inputs = {m[1]: m[-1]["id"] for m in scaling["metrics"] if isinstance(m[0], str)}
    assert inputs == {"Invocations": "invocations", "InvocationsPerInstance": "perinstance"}
    assert {a["value"] for a in scaling["annotations"]["horizontal"]} == {1, 4}
    first_audio = widgets["Time to first audio per request (model server, ms)"]
    assert {m[0] for m in first_audio["metrics"]} == {"StrandsKokoro/kokoro-82m"}
