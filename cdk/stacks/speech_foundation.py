"""Speech foundation: the weights bucket and the two roles around the SageMaker endpoint.

Why a stack of its own: the bucket outlives endpoints (it is retained on destroy) and the roles are
what other accounts' reviewers read first, so they change rarely and apart from the endpoint.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, CfnOutput, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from cdk.config import WEIGHTS_PREFIX, SpeechConfig
from cdk.stacks.buckets import grant_prefix, private_bucket
from cdk.stacks.common import (
    SAGEMAKER_INVOKE_ACTIONS,
    acknowledge,
    bootstrap_image_repository_arn,
    sagemaker_endpoint_arn,
)

WEIGHTS_BUCKET_NAME_EXPORT = "strands-kokoro-weights-bucket-name"
WEIGHTS_BUCKET_ARN_EXPORT = "strands-kokoro-weights-bucket-arn"

ECR_PULL_ACTIONS = ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]


class SpeechFoundationStack(Stack):
    """Weights bucket (+ its access-log bucket), SageMaker execution role, speech client role."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: SpeechConfig, **kwargs: object
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.config = config

        self.access_logs = private_bucket(
            self, "WeightsAccessLogs", lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(365))]
        )
        self.weights = private_bucket(
            self,
            "Weights",
            versioned=True,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="weights/",
        )

        self.execution_role = iam.Role(
            self,
            "SageMakerExecutionRole",
            # No aws:SourceAccount condition: SageMaker's hosting documents none for execution roles, and
            # a key it does not send would break CreateModel. iam:PassRole is what gates who may use it.
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="Kokoro endpoint: read the weights prefix, pull the image, write endpoint logs.",
        )
        self._grant_execution(self.execution_role)

        self.client_role = iam.Role(
            self,
            "SpeechClientRole",
            assumed_by=iam.AccountRootPrincipal(),
            description="Speech clients in this account: invoke the Kokoro endpoint, nothing else.",
        )
        # The same actions as the agent's role (cdk.stacks.common says why there is no separate action
        # for the streamed POST).
        self.client_role.add_to_policy(
            iam.PolicyStatement(
                actions=SAGEMAKER_INVOKE_ACTIONS,
                resources=[sagemaker_endpoint_arn(self, config.endpoint_name)],
            )
        )

        # Explicit export names: the model cache stack imports them by name, which keeps the cdk-nag
        # finding ids of its copy job stable (CDK's generated export names carry a hash).
        CfnOutput(
            self, "WeightsBucketName", value=self.weights.bucket_name, export_name=WEIGHTS_BUCKET_NAME_EXPORT
        )
        CfnOutput(
            self, "WeightsBucketArn", value=self.weights.bucket_arn, export_name=WEIGHTS_BUCKET_ARN_EXPORT
        )
        CfnOutput(self, "SpeechClientRoleArn", value=self.client_role.role_arn)

    def _grant_execution(self, role: iam.Role) -> None:
        """Least privilege for the model container, statement by statement."""
        grant_prefix(
            role,
            self.weights,
            WEIGHTS_PREFIX,
            actions=["s3:GetObject"],
            sid="ReadWeightsPrefix",
            list_sid="ListWeightsPrefix",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PullImage",
                actions=ECR_PULL_ACTIONS,
                resources=[bootstrap_image_repository_arn(self)],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"])
        )
        log_group = self.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"/aws/sagemaker/Endpoints/{self.config.endpoint_name}",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="EndpointLogs",
                actions=[
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:PutLogEvents",
                    "logs:DescribeLogStreams",
                ],
                resources=[log_group, f"{log_group}:log-stream:*"],
            )
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken has no resource-level permissions (IAM service authorization "
            "reference); the image pull itself is scoped to the CDK image asset repository.",
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::<{self._weights_logical_id()}.Arn>/{WEIGHTS_PREFIX}*]",
            "The endpoint reads every object under the model's own weights prefix (SageMaker copies the "
            "whole S3 prefix to /opt/ml/model); object names change with each pinned weight revision.",
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
            f"/aws/sagemaker/Endpoints/{self.config.endpoint_name}:log-stream:*]",
            "SageMaker names one log stream per instance and container at launch; the wildcard is limited "
            "to streams inside this endpoint's own log group.",
        )

    def _weights_logical_id(self) -> str:
        """cdk-nag names a bucket ARN by the bucket's logical id, which carries a CDK-made hash."""
        bucket = self.weights.node.default_child
        assert isinstance(bucket, s3.CfnBucket)
        return self.get_logical_id(bucket)
