"""Agent runtime: the agentcore_app image (ARM64) on a Bedrock AgentCore runtime, plus its endpoint.

L1 ``CfnRuntime`` instead of the L2 ``Runtime``: the L2 grants ECR pull and log delivery to the role it
is given, which would add policies to the foundation stack's role from this stack (or silently drop them
for an imported role). With the L1 the role's permissions live in one reviewed place.
"""

from __future__ import annotations

from aws_cdk import (
    Aws,
    CfnOutput,
    Stack,
)
from aws_cdk import (
    aws_bedrockagentcore as agentcore,
)
from aws_cdk import (
    aws_ecr_assets as ecr_assets,
)
from aws_cdk import (
    aws_iam as iam,
)
from constructs import Construct

from cdk.config import CONVERSATIONS_PREFIX, REPO_ROOT, AgentConfig
from cdk.stacks.common import DOCKER_EXCLUDES
from cdk.stacks.log_groups import AGENTCORE_LOG_GROUP_PREFIX, owned_log_group

AGENT_DOCKERFILE = "agentcore_app/Dockerfile"
MODEL_ENV = "STRANDS_KOKORO_MODEL"
SPEECH_ENDPOINT_ENV = "STRANDS_KOKORO_SPEECH_ENDPOINT"
CONVERSATIONS_ENV = "STRANDS_KOKORO_CONVERSATIONS"
CONVERSATION_MAX_AGE_ENV = "STRANDS_KOKORO_CONVERSATION_MAX_AGE_S"
REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
ENDPOINT_NAME = "live"
DEFAULT_ENDPOINT_NAME = "DEFAULT"
"""The endpoint AgentCore creates with every runtime; invocations without a qualifier go there."""


def runtime_environment(config: AgentConfig, region: str, conversations_bucket: str) -> dict[str, str]:
    """What the entrypoint reads: the Bedrock model, the SageMaker endpoint it speaks through, the region,
    and where conversations are kept (``s3://<bucket>/conversations``) and for how long at most.

    Why the region is written out: nothing documents that AgentCore sets one, and without it the two
    clients fail differently. The speech session raises ``no_region`` (botocore reads only
    ``AWS_DEFAULT_REGION``), and Strands' ``BedrockModel`` silently falls back to us-west-2 (it reads
    ``AWS_REGION``), where the role may not call the model. So the speech endpoint carries
    ``?region=`` (explicit, whatever the environment says) and both variables are set for Bedrock.
    """
    return {
        MODEL_ENV: f"bedrock:{config.bedrock_model_id}",
        SPEECH_ENDPOINT_ENV: f"sagemaker:{config.speech_endpoint_name}?region={region}",
        CONVERSATIONS_ENV: f"s3://{conversations_bucket}/{CONVERSATIONS_PREFIX.rstrip('/')}",
        CONVERSATION_MAX_AGE_ENV: str(config.conversation_max_age_s),
        **dict.fromkeys(REGION_ENVS, region),
    }


class AgentRuntimeStack(Stack):
    """AgentCore runtime (HTTP protocol, public network, IAM-authorised invoke) and a named endpoint."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AgentConfig,
        execution_role: iam.IRole,
        conversations_bucket_name: str,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        # AgentCore runs linux/arm64 containers only; synth just hashes the context.
        self.image = ecr_assets.DockerImageAsset(
            self,
            "AgentImage",
            directory=str(REPO_ROOT),
            file=AGENT_DOCKERFILE,
            platform=ecr_assets.Platform.LINUX_ARM64,
            exclude=[*DOCKER_EXCLUDES, "tts_container", "cdk"],
            display_name="strands-kokoro agentcore_app",
        )
        runtime = agentcore.CfnRuntime(
            self,
            "Runtime",
            agent_runtime_name=config.runtime_name,
            description="Strands agent that speaks each sentence as soon as it is written (Kokoro-82M).",
            role_arn=execution_role.role_arn,
            agent_runtime_artifact=agentcore.CfnRuntime.AgentRuntimeArtifactProperty(
                container_configuration=agentcore.CfnRuntime.ContainerConfigurationProperty(
                    container_uri=self.image.image_uri
                )
            ),
            network_configuration=agentcore.CfnRuntime.NetworkConfigurationProperty(network_mode="PUBLIC"),
            protocol_configuration="HTTP",
            environment_variables=runtime_environment(config, Aws.REGION, conversations_bucket_name),
        )
        self._own_log_groups(config, runtime)
        endpoint = agentcore.CfnRuntimeEndpoint(
            self,
            "RuntimeEndpoint",
            agent_runtime_id=runtime.attr_agent_runtime_id,
            agent_runtime_version=runtime.attr_agent_runtime_version,
            name=ENDPOINT_NAME,
            description="The endpoint clients invoke; follows each new runtime version on deploy.",
        )
        # The groups exist before the endpoint serves (and logs) anything.
        endpoint.node.add_dependency(*self.log_groups)
        CfnOutput(self, "AgentRuntimeArn", value=runtime.attr_agent_runtime_arn)
        CfnOutput(self, "AgentRuntimeEndpointArn", value=endpoint.attr_agent_runtime_endpoint_arn)

    def _own_log_groups(self, config: AgentConfig, runtime: agentcore.CfnRuntime) -> None:
        """The runtime's log groups, created with a retention before AgentCore first writes to them.

        AgentCore writes to ``/aws/bedrock-agentcore/runtimes/<runtime-id>-<endpoint-name>`` and creates the
        group on the first invocation (aws-cdk-lib's own ``Runtime`` pre-creates the ``-DEFAULT`` group
        the same way, for tags). The name needs the generated runtime id, so the group follows the runtime;
        one per endpoint a client may invoke: ``DEFAULT`` (no qualifier) and ``live``.
        """
        self.log_groups = [
            owned_log_group(
                self,
                f"RuntimeLogs{endpoint.capitalize()}",
                name=f"{AGENTCORE_LOG_GROUP_PREFIX}{runtime.attr_agent_runtime_id}-{endpoint}",
                days=config.log_retention_days,
            )
            for endpoint in (DEFAULT_ENDPOINT_NAME, ENDPOINT_NAME)
        ]
