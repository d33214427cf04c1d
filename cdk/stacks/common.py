"""Small helpers the stacks share: ARNs built once, acknowledgments that must carry a reason."""

from __future__ import annotations

from aws_cdk import Acknowledgment, DefaultStackSynthesizer, Fn, Stack, Validations
from constructs import IConstruct

SAGEMAKER_INVOKE_ACTIONS = [
    # POST /invocations, streamed or not. There is no separate IAM action for the streamed call: the
    # SageMaker Runtime API reference says InvokeEndpointWithResponseStream is authorised by
    # sagemaker:InvokeEndpoint, so granting a "sagemaker:InvokeEndpointWithResponseStream" action would
    # only suggest a boundary that does not exist.
    "sagemaker:InvokeEndpoint",
    # the bidirectional session (HTTP/2 on port 8443): an action of its own.
    "sagemaker:InvokeEndpointWithBidirectionalStream",
]
"""What any speech client may do on the endpoint: the agent's role and the speech client role alike."""

MIN_REASON_CHARS = 40
"""An acknowledgment shorter than this cannot say why the finding is acceptable; refuse it."""

DOCKER_EXCLUDES = [
    ".git",
    ".venv",
    "**/.venv",
    "**/__pycache__",
    "**/*.pyc",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "cdk/cdk.out",
    "cdk.out",
    "node_modules",
    "artifacts",
    "dist",
    "build",
    "tests",
    "benchmarks",
    "examples",
    "docs",
    "*.egg-info",
    ".whl",
    ".gl",
]
"""Kept out of both image build contexts: synth hashes the context, so a venv would make it slow."""


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on one construct, with a reason a reviewer can check."""
    if len(reason.strip()) < MIN_REASON_CHARS:
        raise ValueError(f"acknowledgment of {rule} needs a real reason, got {reason!r}")
    Validations.of(construct).acknowledge(Acknowledgment(id=rule, reason=reason))


def bootstrap_image_repository_arn(stack: Stack) -> str:
    """ARN of the CDK bootstrap ECR repository that holds this app's Docker image assets.

    Why not ``asset.repository``: the roles live in foundation stacks while the images belong to the
    endpoint/runtime stacks; referencing the asset from the role's stack would make the two stacks
    reference each other. The bootstrap repository name is fixed by the bootstrap template, so the ARN
    can be written down here, honouring a custom ``@aws-cdk/core:bootstrapQualifier``.
    """
    qualifier = stack.node.try_get_context("@aws-cdk/core:bootstrapQualifier") or (
        DefaultStackSynthesizer.DEFAULT_QUALIFIER
    )
    name = DefaultStackSynthesizer.DEFAULT_IMAGE_ASSETS_REPOSITORY_NAME.replace(
        "${Qualifier}", str(qualifier)
    )
    return Fn.sub(f"arn:${{AWS::Partition}}:ecr:${{AWS::Region}}:${{AWS::AccountId}}:repository/{name}")


def sagemaker_endpoint_arn(stack: Stack, endpoint_name: str) -> str:
    """The endpoint ARN (SageMaker lower-cases names in ARNs) that invoke permissions are scoped to."""
    return stack.format_arn(service="sagemaker", resource="endpoint", resource_name=endpoint_name.lower())
