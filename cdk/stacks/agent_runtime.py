"""Agent runtime: the agentcore_app image (ARM64) on a Bedrock AgentCore runtime, plus its endpoint.

L1 ``CfnRuntime`` instead of the L2 ``Runtime``: the L2 grants ECR pull and log delivery to the role it
is given, which would add policies to the foundation stack's role from this stack (or silently drop them
for an imported role). With the L1 the role's permissions live in one reviewed place.
"""

from __future__ import annotations

from aws_cdk import (
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

from cdk.config import REPO_ROOT, AgentConfig
from cdk.stacks.common import DOCKER_EXCLUDES

AGENT_DOCKERFILE = "agentcore_app/Dockerfile"
MODEL_ENV = "STRANDS_KOKORO_MODEL"
SPEECH_ENDPOINT_ENV = "STRANDS_KOKORO_SPEECH_ENDPOINT"
ENDPOINT_NAME = "live"


def runtime_environment(config: AgentConfig) -> dict[str, str]:
    """What the entrypoint reads: the Bedrock model and the SageMaker endpoint it speaks through."""
    return {
        MODEL_ENV: f"bedrock:{config.bedrock_model_id}",
        SPEECH_ENDPOINT_ENV: f"sagemaker:{config.speech_endpoint_name}",
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
            environment_variables=runtime_environment(config),
        )
        endpoint = agentcore.CfnRuntimeEndpoint(
            self,
            "RuntimeEndpoint",
            agent_runtime_id=runtime.attr_agent_runtime_id,
            agent_runtime_version=runtime.attr_agent_runtime_version,
            name=ENDPOINT_NAME,
            description="The endpoint clients invoke; follows each new runtime version on deploy.",
        )
        CfnOutput(self, "AgentRuntimeArn", value=runtime.attr_agent_runtime_arn)
        CfnOutput(self, "AgentRuntimeEndpointArn", value=endpoint.attr_agent_runtime_endpoint_arn)
