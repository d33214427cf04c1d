"""Agent foundation: the AgentCore runtime's execution role and the bucket its conversations live in.

Why apart from the runtime: the role is the security boundary of the agent (which model, which endpoint,
which part of which bucket) and should be reviewable without reading image or runtime details. The
conversations bucket sits here because the role's S3 statements name it, and because it holds data that
outlives a runtime redeploy.
"""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from cdk.config import CONVERSATIONS_PREFIX, AgentConfig
from cdk.stacks.buckets import grant_prefix, private_bucket
from cdk.stacks.common import (
    SAGEMAKER_INVOKE_ACTIONS,
    acknowledge,
    bootstrap_image_repository_arn,
    sagemaker_endpoint_arn,
)
from cdk.stacks.speech_foundation import ECR_PULL_ACTIONS

BEDROCK_INVOKE_ACTIONS = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
SPEECH_INVOKE_ACTIONS = SAGEMAKER_INVOKE_ACTIONS
"""bidi mode opens one HTTP/2 session per turn; batch mode, the baseline, POSTs (streamed) once."""
WORKLOAD_TOKEN_ACTIONS = [
    "bedrock-agentcore:GetWorkloadAccessToken",
    "bedrock-agentcore:GetWorkloadAccessTokenForJWT",
    "bedrock-agentcore:GetWorkloadAccessTokenForUserId",
]
"""AgentCore Identity: the runtime obtains the agent's workload access token on its behalf."""
XRAY_ACTIONS = [
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
]
RUNTIME_LOG_GROUP = "/aws/bedrock-agentcore/runtimes"
CONVERSATION_OBJECT_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
"""What Strands' S3SessionManager does to a conversation's objects (HEAD is authorised by s3:GetObject,
a batch delete by s3:DeleteObject per key)."""


class AgentFoundationStack(Stack):
    """The role bedrock-agentcore.amazonaws.com assumes to run the agent container, and its conversations."""

    def __init__(self, scope: Construct, construct_id: str, *, config: AgentConfig, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.config = config
        self._conversation_buckets()
        # Confused-deputy guard: only AgentCore acting for a runtime of this account, in this region.
        self.execution_role = iam.Role(
            self,
            "AgentCoreExecutionRole",
            assumed_by=iam.ServicePrincipal(
                "bedrock-agentcore.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{Aws.PARTITION}:bedrock-agentcore:{Aws.REGION}:"
                        f"{Aws.ACCOUNT_ID}:*"
                    },
                },
            ),
            description="strands-kokoro agent: call one Bedrock model, speak through one SageMaker endpoint.",
        )
        role = self.execution_role
        role.add_to_policy(
            iam.PolicyStatement(
                sid="InvokeModel", actions=BEDROCK_INVOKE_ACTIONS, resources=self._model_arns()
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="Speak",
                actions=SPEECH_INVOKE_ACTIONS,
                resources=[sagemaker_endpoint_arn(self, config.speech_endpoint_name)],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PullImage", actions=ECR_PULL_ACTIONS, resources=[bootstrap_image_repository_arn(self)]
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"])
        )
        self._grant_logs_and_traces(role)
        self._grant_workload_identity(role)
        self._grant_conversations(role)
        self._acknowledge(role)
        CfnOutput(self, "ExecutionRoleArn", value=role.role_arn)
        CfnOutput(self, "ConversationsBucketName", value=self.conversations.bucket_name)

    def _conversation_buckets(self) -> None:
        """The conversations bucket (+ its access-log bucket): encrypted, private, TLS only, self-expiring.

        Conversations expire by a lifecycle rule on their prefix (``conversation_retention_days``), which
        is also what removes the many conversations nobody comes back to. Retained on destroy: S3 cannot
        delete a bucket that still holds objects; the rule empties it within the retention period.
        """
        self.conversation_access_logs = private_bucket(
            self,
            "ConversationAccessLogs",
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(self.config.log_retention_days))],
        )
        self.conversations = private_bucket(
            self,
            "Conversations",
            server_access_logs_bucket=self.conversation_access_logs,
            server_access_logs_prefix="conversations/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="ExpireConversations",
                    prefix=CONVERSATIONS_PREFIX,
                    expiration=Duration.days(self.config.conversation_retention_days),
                ),
                s3.LifecycleRule(
                    id="AbortIncompleteUploads", abort_incomplete_multipart_upload_after=Duration.days(1)
                ),
            ],
        )

    def _grant_conversations(self, role: iam.Role) -> None:
        """Read, write and delete under the conversations prefix; list only that prefix. Nothing else."""
        grant_prefix(
            role,
            self.conversations,
            CONVERSATIONS_PREFIX,
            actions=CONVERSATION_OBJECT_ACTIONS,
            sid="Conversations",
            list_sid="ListConversations",
        )

    def _model_arns(self) -> list[str]:
        """A foundation model in this region, or a cross-region profile plus the models it routes to."""
        config = self.config
        if not config.is_inference_profile:
            return [f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{config.bedrock_model_id}"]
        return [
            f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}:{Aws.ACCOUNT_ID}:inference-profile/{config.bedrock_model_id}",
            f"arn:{Aws.PARTITION}:bedrock:*::foundation-model/{config.foundation_model_id}",
        ]

    def _grant_logs_and_traces(self, role: iam.Role) -> None:
        """Runtime logs go to AgentCore's own log groups; traces and metrics to X-Ray / CloudWatch.

        As in AWS's AgentCore runtime-permissions guide and aws-cdk-lib's ``bedrockagentcore.Runtime``
        (which grants the same statements to the roles it manages).
        """
        log_groups = f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:{RUNTIME_LOG_GROUP}/*"
        role.add_to_policy(
            iam.PolicyStatement(
                sid="RuntimeLogGroups",
                actions=["logs:CreateLogGroup", "logs:DescribeLogStreams"],
                resources=[log_groups],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="RuntimeLogStreams",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[f"{log_groups}:log-stream:*"],
            )
        )
        # Listed by AWS's runtime-permissions guide (and granted by aws-cdk-lib's Runtime) on the region's
        # log-group:*; it reads group metadata (names, retention), never log data.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="DescribeLogGroups",
                actions=["logs:DescribeLogGroups"],
                resources=[self._all_log_groups_arn()],
            )
        )
        role.add_to_policy(iam.PolicyStatement(sid="Traces", actions=XRAY_ACTIONS, resources=["*"]))
        role.add_to_policy(
            iam.PolicyStatement(
                sid="Metrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": "bedrock-agentcore"}},
            )
        )

    def _all_log_groups_arn(self) -> str:
        return f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:*"

    def workload_identity_arns(self) -> list[str]:
        """The default workload identity directory, and the identities AgentCore makes for this runtime.

        AgentCore names the runtime's workload identity ``<runtime-name>-<generated suffix>``, so only the
        suffix is a wildcard (AWS's runtime-permissions guide scopes it the same way).
        """
        directory = (
            f"arn:{Aws.PARTITION}:bedrock-agentcore:{Aws.REGION}:{Aws.ACCOUNT_ID}:"
            "workload-identity-directory/default"
        )
        return [directory, f"{directory}/workload-identity/{self.config.runtime_name}-*"]

    def _grant_workload_identity(self, role: iam.Role) -> None:
        role.add_to_policy(
            iam.PolicyStatement(
                sid="WorkloadAccessToken",
                actions=WORKLOAD_TOKEN_ACTIONS,
                resources=self.workload_identity_arns(),
            )
        )

    def _conversations_logical_id(self) -> str:
        """cdk-nag names a bucket ARN by the bucket's logical id, which carries a CDK-made hash."""
        bucket = self.conversations.node.default_child
        assert isinstance(bucket, s3.CfnBucket)
        return self.get_logical_id(bucket)

    def _acknowledge(self, role: iam.Role) -> None:
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::<{self._conversations_logical_id()}.Arn>/{CONVERSATIONS_PREFIX}*]",
            "One object per message of every conversation, named by AgentCore's runtime session id at run "
            "time; the wildcard covers only the conversations prefix of the agent's own bucket.",
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "Only for actions without resource-level permissions: ecr:GetAuthorizationToken, the X-Ray "
            "trace/sampling calls and cloudwatch:PutMetricData (pinned to the bedrock-agentcore namespace).",
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
            f"{RUNTIME_LOG_GROUP}/*]",
            "AgentCore creates the runtime's log group with a generated runtime id in its name; the wildcard "
            "stays inside AgentCore's own /aws/bedrock-agentcore/runtimes/ namespace.",
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
            f"{RUNTIME_LOG_GROUP}/*:log-stream:*]",
            "Log streams are named per runtime session at run time; the wildcard stays inside AgentCore's "
            "runtime log groups.",
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:*]",
            "Only logs:DescribeLogGroups, which AgentCore's runtime-permissions guide grants on log-group:* "
            "of the region: it lists group metadata (names, retention), never log data, and writes stay "
            "limited to /aws/bedrock-agentcore/runtimes/.",
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock-agentcore:<AWS::Region>:<AWS::AccountId>:"
            f"workload-identity-directory/default/workload-identity/{self.config.runtime_name}-*]",
            "AgentCore creates this runtime's workload identity as <runtime-name>-<generated suffix>; the "
            "wildcard covers only that suffix, in this account and region (AgentCore runtime-permissions "
            "guide).",
        )
        if self.config.is_inference_profile:
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/"
                f"{self.config.foundation_model_id}]",
                "A cross-region inference profile routes each call to one of several regions; Bedrock checks "
                "the foundation model ARN in the serving region, so only the region is a wildcard.",
            )
