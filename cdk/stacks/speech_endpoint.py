"""Speech endpoint: the tts_container image, SageMaker model + endpoint config + endpoint, scaling, alarms.

L1 SageMaker constructs: aws-cdk-lib 2.275 has no stable L2 for SageMaker hosting, and the L1 keeps every
property visible (network isolation, uncompressed S3 model data, startup timeouts, routing) in one place.
Alarms and the dashboard live in :mod:`cdk.stacks.observability`.
"""

from __future__ import annotations

from aws_cdk import (
    CfnOutput,
    Stack,
)
from aws_cdk import (
    aws_applicationautoscaling as appscaling,
)
from aws_cdk import (
    aws_ecr_assets as ecr_assets,
)
from aws_cdk import (
    aws_iam as iam,
)
from aws_cdk import (
    aws_sagemaker as sagemaker,
)
from constructs import Construct

from cdk.config import CONTAINER_MODEL_DIR, REPO_ROOT, SpeechConfig
from cdk.stacks.common import DOCKER_EXCLUDES
from cdk.stacks.log_groups import SAGEMAKER_LOG_GROUP_PREFIX, owned_log_group
from cdk.stacks.observability import EndpointMonitoring, utilization_scaling_metric

VARIANT_NAME = "AllTraffic"
TTS_DOCKERFILE = "tts_container/Dockerfile"
ROUTING_STRATEGY = "LEAST_OUTSTANDING_REQUESTS"
"""A bidi session holds its instance for minutes: send new ones where the fewest are open, not at random."""
ROOT_USER_BUILD_ARG = "APP_USER"
"""The Dockerfile's build argument naming the user the server runs as (``0`` = root, the fallback)."""


def tts_build_args(config: SpeechConfig) -> dict[str, str]:
    """Build arguments of the TTS image.

    The weights come from the S3 model cache (SageMaker copies them to /opt/ml/model), so the image does
    not bake them in: one copy of the weights, and the build needs no hub access.
    """
    args = {"BAKE_WEIGHTS": "0"}
    if config.tts_run_as_root:
        args[ROOT_USER_BUILD_ARG] = "0"
    return args


class SpeechEndpointStack(Stack):
    """A bidirectional-streaming SageMaker endpoint, scaled on the share of its measured capacity in use."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: SpeechConfig,
        execution_role: iam.IRole,
        model_data_uri: str,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        # Synth only hashes this context (offline, fast); Docker builds it when the asset is published.
        self.image = ecr_assets.DockerImageAsset(
            self,
            "TtsImage",
            directory=str(REPO_ROOT),
            file=TTS_DOCKERFILE,
            platform=ecr_assets.Platform.LINUX_AMD64,
            exclude=[*DOCKER_EXCLUDES, "agentcore_app", "cdk"],
            build_args=tts_build_args(config),
            display_name="kokoro tts_container",
        )
        # Created before the endpoint so SageMaker writes into a group that expires its logs.
        self.log_group = owned_log_group(
            self,
            "EndpointLogs",
            name=SAGEMAKER_LOG_GROUP_PREFIX + config.endpoint_name,
            days=config.log_retention_days,
        )

        model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=execution_role.role_arn,
            # The container needs no network: SageMaker copies the weights to /opt/ml/model itself. Whether
            # bidirectional streaming works with isolation is not documented either way: the first
            # deployment confirms it (docs/deploy.md), and kokoro:network_isolation=false turns it off.
            enable_network_isolation=config.network_isolation,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=self.image.image_uri,
                mode="SingleModel",
                model_data_source=sagemaker.CfnModel.ModelDataSourceProperty(
                    s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                        s3_uri=model_data_uri,
                        s3_data_type="S3Prefix",
                        compression_type="None",
                    )
                ),
                environment={
                    # tts_container.weights.cache reads its cache from here; the manifest makes start-up
                    # instant.
                    "STRANDS_KOKORO_CACHE": CONTAINER_MODEL_DIR,
                    "KOKORO_ENGINE": "auto",
                },
            ),
        )
        endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=VARIANT_NAME,
                    model_name=model.attr_model_name,
                    instance_type=config.instance_type,
                    initial_instance_count=config.instance_count,
                    initial_variant_weight=1.0,
                    container_startup_health_check_timeout_in_seconds=600,
                    model_data_download_timeout_in_seconds=600,
                    routing_config=sagemaker.CfnEndpointConfig.RoutingConfigProperty(
                        routing_strategy=ROUTING_STRATEGY
                    ),
                )
            ],
        )
        endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=config.endpoint_name,
            endpoint_config_name=endpoint_config.attr_endpoint_config_name,
        )
        endpoint.node.add_dependency(self.log_group)
        self.endpoint_name = config.endpoint_name
        self._autoscale(config, endpoint)
        self.monitoring = EndpointMonitoring(
            self, "Monitoring", config=config, variant_name=VARIANT_NAME, log_group=self.log_group
        )
        CfnOutput(self, "EndpointName", value=endpoint.attr_endpoint_name)
        CfnOutput(self, "SpeechEndpoint", value=f"sagemaker:{config.endpoint_name}")

    def _autoscale(self, config: SpeechConfig, endpoint: sagemaker.CfnEndpoint) -> None:
        """Track the share of the measured capacity in use, averaged over the instances.

        Each model server measures how many listeners it keeps playing (its engine's audio seconds per
        second) and writes, every 10 s, the listeners inside an answer over that number; a metric filter
        makes it ``ListenerUtilization`` (:mod:`cdk.stacks.observability`). At 1.0 a server refuses new
        answers, so the policy holds the mean at ``target_utilization`` and scales out before that, on a
        number that means the same on every instance type. Why not ``ConcurrentRequestsPerModel``: it
        counts open sessions, and a session holds its instance for minutes whether it speaks or waits
        for the agent, so no fixed count per instance says how full the engine is. Scale-in waits longer
        than scale-out so a pause between conversations does not drop an instance (and its warm model)
        too early.
        """
        # L1 on purpose: the L2 ScalableTarget creates an IAM role with no permissions, while SageMaker
        # variants scale through Application Auto Scaling's service-linked role when RoleARN is omitted.
        target = appscaling.CfnScalableTarget(
            self,
            "ScalableTarget",
            service_namespace="sagemaker",
            resource_id=f"endpoint/{config.endpoint_name}/variant/{VARIANT_NAME}",
            scalable_dimension="sagemaker:variant:DesiredInstanceCount",
            min_capacity=config.instance_count,
            max_capacity=config.max_instance_count,
        )
        target.node.add_dependency(endpoint)
        appscaling.CfnScalingPolicy(
            self,
            "UtilizationScaling",
            policy_name=f"{config.endpoint_name}-listener-utilization",
            policy_type="TargetTrackingScaling",
            scaling_target_id=target.ref,
            target_tracking_scaling_policy_configuration=appscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
                target_value=config.target_utilization,
                customized_metric_specification=utilization_scaling_metric(config.endpoint_name),
                scale_out_cooldown=config.scale_out_cooldown_s,
                scale_in_cooldown=config.scale_in_cooldown_s,
            ),
        )
