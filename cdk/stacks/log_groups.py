"""Log groups the stacks own, so every log the deployment writes expires.

A group a service creates on first use keeps its logs forever, and CloudFormation cannot set a retention
on a group it did not create; so each is created here, under the exact name the service writes to, before
it first writes, with the configured retention. They are deleted with their stack: the SageMaker group's
name is fixed by the endpoint name, and a retained one would fail the next deploy ("already exists").
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk.config import LOG_RETENTION_DAYS

_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
}
assert tuple(_RETENTION) == LOG_RETENTION_DAYS, "config and log_groups disagree on retention periods"

SAGEMAKER_LOG_GROUP_PREFIX = "/aws/sagemaker/Endpoints/"
"""SageMaker writes every container's stdout/stderr to ``/aws/sagemaker/Endpoints/<endpoint-name>``."""

AGENTCORE_LOG_GROUP_PREFIX = "/aws/bedrock-agentcore/runtimes/"
"""AgentCore writes a runtime's logs to ``/aws/bedrock-agentcore/runtimes/<runtime-id>-<endpoint-name>``."""


def retention(days: int) -> logs.RetentionDays:
    """The CDK enum for a retention the config has already validated."""
    return _RETENTION[days]


def owned_log_group(
    scope: Construct, construct_id: str, *, days: int, name: str | None = None
) -> logs.LogGroup:
    """A log group with ``days`` of retention that is deleted with its stack (see the module docstring)."""
    return logs.LogGroup(
        scope,
        construct_id,
        log_group_name=name,
        retention=retention(days),
        removal_policy=RemovalPolicy.DESTROY,
    )
