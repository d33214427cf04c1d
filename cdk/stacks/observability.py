"""Alarms and a dashboard for the speech endpoint that stay meaningful when sessions last minutes.

SageMaker documents ``ModelLatency`` for InvokeEndpoint requests only and no first-chunk metric for a
stream, so first audio comes from the model server's own ``synthesis_complete.first_audio_ms``: a metric
filter on the endpoint's log group turns its JSON line (:data:`FIRST_AUDIO_LOG_FIELDS`) into
:data:`FIRST_AUDIO_METRIC`. Alarms: first audio, ``Invocation5XXErrors``, the share of
``Invocation4XXErrors``, and saturation (:data:`UTILIZATION_METRIC` at 1.0 or more for 5 minutes). The
dashboard adds the scaling state; ``ModelLatency`` and ``ConcurrentRequestsPerModel`` are there for
reference only. Why and the sources: docs/deploy.md, "Alarms, dashboard, logs".
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk.config import SpeechConfig

SAGEMAKER_NAMESPACE = "AWS/SageMaker"
CUSTOM_NAMESPACE_PREFIX = "StrandsKokoro/"
"""Custom metrics go to ``StrandsKokoro/<endpoint-name>``: the log group is per endpoint, the metric too."""

FIRST_AUDIO_METRIC = "FirstAudioLatency"
FIRST_AUDIO_EVENT = "synthesis_complete"
FIRST_AUDIO_LOG_FIELDS = ("event", "first_audio_ms")
"""The log line the model server must print per completed request: a whole line that is one JSON object
with ``"event": "synthesis_complete"`` and a number ``first_audio_ms`` (other fields may follow)."""

LOAD_EVENT = "listener_load"
LOAD_LOG_FIELDS = ("event", "utilization", "capacity_listeners")
"""The line the model server prints every 10 s (``tts_container.reporting.metric_lines.log_load``): a whole
line that is one JSON object with ``"event": "listener_load"``, a number ``utilization`` (listeners inside an
answer over the listeners it admits) and a number ``capacity_listeners`` (the listeners it admits,
measured)."""

UTILIZATION_METRIC = "ListenerUtilization"
"""Average = the mean share of the measured capacity in use over the instances: each instance writes one
line per 10 s, so each weighs the same, and adding an instance lowers it in proportion (what a target
tracking metric must do)."""
CAPACITY_METRIC = "CapacityListeners"
"""The listeners one instance admits at once, as it measured them: the instance type's capacity."""

LOAD_LINES_PER_MINUTE = 6
"""``listener_load`` lines one warm model server writes per minute
(``tts_container.reporting.metric_lines.LOAD_INTERVAL_S`` is 10 s): a minute's SampleCount over this is the
number of instances with a warm server, idle or not."""

SATURATED_UTILIZATION = 1.0
"""At this share a model server refuses every new answer (``overloaded``); answers under way go on."""

ONE_MINUTE = Duration.minutes(1)


def custom_namespace(endpoint_name: str) -> str:
    """``StrandsKokoro/<endpoint-name>``: the namespace of every metric the endpoint's log filters make."""
    return CUSTOM_NAMESPACE_PREFIX + endpoint_name


def utilization_scaling_metric(
    endpoint_name: str,
) -> appscaling.CfnScalingPolicy.CustomizedMetricSpecificationProperty:
    """The scaling policy's metric: :data:`UTILIZATION_METRIC`, Average over all instances.

    No dimensions: the metric filter publishes none, and a customized metric must name exactly the
    dimensions it was published with. No unit: the filter publishes a plain ratio.
    """
    return appscaling.CfnScalingPolicy.CustomizedMetricSpecificationProperty(
        namespace=custom_namespace(endpoint_name),
        metric_name=UTILIZATION_METRIC,
        statistic="Average",
    )


class EndpointMonitoring(Construct):
    """The four alarms and the dashboard of one endpoint variant."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: SpeechConfig,
        variant_name: str,
        log_group: logs.ILogGroup,
    ) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        self.dimensions = {"EndpointName": config.endpoint_name, "VariantName": variant_name}
        self.first_audio_filter = self._first_audio_filter(log_group)
        self.utilization_filter, self.capacity_filter = self._load_filters(log_group)
        self.first_audio_alarm = self._first_audio_alarm()
        self.server_error_alarm = self._server_error_alarm()
        self.client_error_alarm = self._client_error_alarm()
        self.saturation_alarm = self._saturation_alarm()
        self.dashboard = self._dashboard()

    @property
    def alarms(self) -> list[cloudwatch.Alarm]:
        return [
            self.first_audio_alarm,
            self.server_error_alarm,
            self.client_error_alarm,
            self.saturation_alarm,
        ]

    def sagemaker_metric(self, name: str, statistic: str, period: Duration = ONE_MINUTE) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=SAGEMAKER_NAMESPACE,
            metric_name=name,
            dimensions_map=self.dimensions,
            statistic=statistic,
            period=period,
        )

    def first_audio(self, statistic: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=custom_namespace(self.config.endpoint_name),
            metric_name=FIRST_AUDIO_METRIC,
            statistic=statistic,
            period=ONE_MINUTE,
            unit=cloudwatch.Unit.MILLISECONDS,
        )

    def _first_audio_filter(self, log_group: logs.ILogGroup) -> logs.MetricFilter:
        event, value = FIRST_AUDIO_LOG_FIELDS
        return logs.MetricFilter(
            self,
            "FirstAudioFilter",
            log_group=log_group,
            filter_pattern=logs.FilterPattern.all(
                logs.FilterPattern.string_value(f"$.{event}", "=", FIRST_AUDIO_EVENT),
                logs.FilterPattern.number_value(f"$.{value}", ">=", 0),
            ),
            metric_namespace=custom_namespace(self.config.endpoint_name),
            metric_name=FIRST_AUDIO_METRIC,
            metric_value=f"$.{value}",
            unit=cloudwatch.Unit.MILLISECONDS,
        )

    def utilization(self, statistic: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=custom_namespace(self.config.endpoint_name),
            metric_name=UTILIZATION_METRIC,
            statistic=statistic,
            period=ONE_MINUTE,
        )

    def capacity(self, statistic: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=custom_namespace(self.config.endpoint_name),
            metric_name=CAPACITY_METRIC,
            statistic=statistic,
            period=ONE_MINUTE,
            unit=cloudwatch.Unit.COUNT,
        )

    def _load_filters(self, log_group: logs.ILogGroup) -> tuple[logs.MetricFilter, logs.MetricFilter]:
        """Two metrics from the one ``listener_load`` line (a metric filter makes exactly one metric).

        No default value: a line that does not match emits nothing, so the log's other lines do not pull
        the average towards an invented number, and an endpoint with no warm server has no data at all.
        """
        event, utilization, capacity = LOAD_LOG_FIELDS
        is_load = logs.FilterPattern.string_value(f"$.{event}", "=", LOAD_EVENT)
        namespace = custom_namespace(self.config.endpoint_name)
        utilization_filter = logs.MetricFilter(
            self,
            "UtilizationFilter",
            log_group=log_group,
            filter_pattern=logs.FilterPattern.all(
                is_load, logs.FilterPattern.number_value(f"$.{utilization}", ">=", 0)
            ),
            metric_namespace=namespace,
            metric_name=UTILIZATION_METRIC,
            metric_value=f"$.{utilization}",
        )
        capacity_filter = logs.MetricFilter(
            self,
            "CapacityFilter",
            log_group=log_group,
            filter_pattern=logs.FilterPattern.all(
                is_load, logs.FilterPattern.number_value(f"$.{capacity}", ">=", 1)
            ),
            metric_namespace=namespace,
            metric_name=CAPACITY_METRIC,
            metric_value=f"$.{capacity}",
            unit=cloudwatch.Unit.COUNT,
        )
        return utilization_filter, capacity_filter

    def _first_audio_alarm(self) -> cloudwatch.Alarm:
        limit = self.config.first_audio_alarm_ms
        return self.first_audio("p90").create_alarm(
            self,
            "FirstAudioLatencyAlarm",
            alarm_description=(
                f"{self.config.endpoint_name}: p90 time to first audio above {limit} ms in 3 of 5 minutes "
                "(the model server's own first_audio_ms per request, from its log)"
            ),
            threshold=limit,
            evaluation_periods=5,
            datapoints_to_alarm=3,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _server_error_alarm(self) -> cloudwatch.Alarm:
        return self.sagemaker_metric("Invocation5XXErrors", "Sum").create_alarm(
            self,
            "Invocation5XXAlarm",
            alarm_description=f"{self.config.endpoint_name}: 5XX answers in 3 minutes on end",
            threshold=1,
            evaluation_periods=3,
            datapoints_to_alarm=3,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _client_error_alarm(self) -> cloudwatch.Alarm:
        pct = self.config.client_error_alarm_pct
        return self.sagemaker_metric("Invocation4XXErrors", "Average").create_alarm(
            self,
            "Invocation4XXAlarm",
            alarm_description=(
                f"{self.config.endpoint_name}: more than {pct:g}% of invocations answered 4XX in 3 of 5 "
                "minutes (a client sending bad requests, or refusals under overload)"
            ),
            threshold=pct / 100,
            evaluation_periods=5,
            datapoints_to_alarm=3,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _saturation_alarm(self) -> cloudwatch.Alarm:
        """The instances' mean utilization at the refusal point for 5 minutes on end.

        Average, not Maximum: one full instance while others have room is the router's and the clients'
        job (a refused answer retries on a new session, which SageMaker places on a less busy instance);
        scaling is failing only when the mean is there too, because the policy tracks that mean. Missing
        data (no warm server writes the line) is not saturation: the 5XX alarm covers a dead endpoint.
        """
        config = self.config
        return self.utilization("Average").create_alarm(
            self,
            "UtilizationSaturationAlarm",
            alarm_description=(
                f"{config.endpoint_name}: the measured listener capacity all in use (mean utilization over "
                f"the instances >= {SATURATED_UTILIZATION:g}) for 5 minutes: the model servers refuse new "
                f"answers and autoscaling cannot keep up (max {config.max_instance_count} instances, or new "
                f"ones still starting?); the scaling target is {config.target_utilization:g}"
            ),
            threshold=SATURATED_UTILIZATION,
            evaluation_periods=5,
            datapoints_to_alarm=5,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _dashboard(self) -> cloudwatch.Dashboard:
        config = self.config
        dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"{config.endpoint_name}-speech",
            default_interval=Duration.hours(3),
        )
        dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms), width=24, height=3)
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Time to first audio per request (model server, ms)",
                left=[self.first_audio("p50"), self.first_audio("p90")],
                left_annotations=[
                    cloudwatch.HorizontalAnnotation(value=config.first_audio_alarm_ms, label="alarm")
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="ModelLatency (us; documented for InvokeEndpoint, reference only)",
                left=[
                    self.sagemaker_metric("ModelLatency", "p50"),
                    self.sagemaker_metric("ModelLatency", "p90"),
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Invocations and errors",
                left=[
                    self.sagemaker_metric("Invocation4XXErrors", "Sum"),
                    self.sagemaker_metric("Invocation5XXErrors", "Sum"),
                ],
                right=[self.sagemaker_metric("Invocations", "Sum")],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Listener utilization (share of the measured capacity) vs the scaling target",
                left=[self.utilization("Average"), self.utilization("Maximum")],
                left_annotations=[
                    cloudwatch.HorizontalAnnotation(value=config.target_utilization, label="scaling target"),
                    cloudwatch.HorizontalAnnotation(
                        value=SATURATED_UTILIZATION, label="full: new answers refused (saturation alarm)"
                    ),
                ],
                left_y_axis=cloudwatch.YAxisProps(min=0),
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Listeners one instance admits (its measured capacity)",
                left=[self.capacity("Minimum"), self.capacity("Average")],
                left_y_axis=cloudwatch.YAxisProps(min=0),
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Concurrent requests per model (open sessions; reference, not scaled on)",
                left=[
                    self.sagemaker_metric("ConcurrentRequestsPerModel", "Average"),
                    self.sagemaker_metric("ConcurrentRequestsPerModel", "Maximum"),
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Instances in service (autoscaling state)",
                left=[self._instances_in_service(), self._warm_instances()],
                left_annotations=[
                    cloudwatch.HorizontalAnnotation(value=config.instance_count, label="min instances"),
                    cloudwatch.HorizontalAnnotation(value=config.max_instance_count, label="max instances"),
                ],
                left_y_axis=cloudwatch.YAxisProps(min=0, max=config.max_instance_count + 1),
                width=12,
            ),
            cloudwatch.TextWidget(
                markdown=(
                    "**Reading this dashboard.** First audio comes from the model server's log "
                    "(`synthesis_complete.first_audio_ms`), utilization and capacity from its "
                    "`listener_load` line every 10 s (docs/scaling.md). Warm instances = those lines per "
                    "minute / 6, idle or not; instances in service = Invocations / InvocationsPerInstance "
                    "(SageMaker sends 1/instances per request), so it shows only while requests arrive; "
                    "the scaling history itself is in Application Auto Scaling's activities (`aws "
                    "application-autoscaling describe-scaling-activities --service-namespace sagemaker`)."
                ),
                width=12,
                height=6,
            ),
        )
        return dashboard

    def _instances_in_service(self) -> cloudwatch.MathExpression:
        return cloudwatch.MathExpression(
            expression="invocations / perinstance",
            using_metrics={
                "invocations": self.sagemaker_metric("Invocations", "Sum"),
                "perinstance": self.sagemaker_metric("InvocationsPerInstance", "Sum"),
            },
            label="instances in service",
            period=ONE_MINUTE,
        )

    def _warm_instances(self) -> cloudwatch.MathExpression:
        return cloudwatch.MathExpression(
            expression=f"lines / {LOAD_LINES_PER_MINUTE}",
            using_metrics={"lines": self.capacity("SampleCount")},
            label="warm instances (load lines)",
            period=ONE_MINUTE,
        )
