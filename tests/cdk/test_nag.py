"""cdk-nag's AwsSolutions pack over every stack: nothing unacknowledged, every acknowledgment reasoned.

The ``synthesized`` fixture already fails if cdk-nag reports anything (synth raises ValidationFailed);
these tests pin down what was acknowledged, where, and why, so a new acknowledgment needs a review here.
"""

from __future__ import annotations

import pytest

from cdk.config import AGENT_STACKS, SPEECH_STACKS
from cdk.stacks.common import MIN_REASON_CHARS, acknowledge
from tests.cdk.synth_support import Synthesized

# A full synth takes 20-60 s, several minutes on a loaded CI machine: more than the default 300 s.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
EXPECTED = {
    "KokoroSpeechFoundation": {
        "AwsSolutions-IAM5[Resource::*]",  # ecr:GetAuthorizationToken
        "AwsSolutions-IAM5[Resource::<Weights79DEE8EF.Arn>/kokoro-82m/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
        "/aws/sagemaker/Endpoints/kokoro-82m:log-stream:*]",
    },
    "KokoroModelCache": {
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
        "AwsSolutions-L1",
        "AwsSolutions-IAM5[Action::s3:GetObject*]",
        "AwsSolutions-IAM5[Action::s3:GetBucket*]",
        "AwsSolutions-IAM5[Action::s3:List*]",
        "AwsSolutions-IAM5[Action::s3:DeleteObject*]",
        "AwsSolutions-IAM5[Action::s3:Abort*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*]",
        "AwsSolutions-IAM5[Resource::strands-kokoro-weights-bucket-arn/*]",
    },
    "KokoroSpeechEndpoint": set(),
    "KokoroAgentFoundation": {
        "AwsSolutions-IAM5[Resource::*]",
        # one object per message of each conversation, under the conversations prefix only
        "AwsSolutions-IAM5[Resource::<ConversationsBC91B70D.Arn>/conversations/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
        "/aws/bedrock-agentcore/runtimes/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
        "/aws/bedrock-agentcore/runtimes/*:log-stream:*]",
        # logs:DescribeLogGroups, as AWS's AgentCore runtime-permissions guide grants it
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:*]",
        # the runtime's workload identity: <runtime-name>-<suffix AgentCore generates>
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock-agentcore:<AWS::Region>:<AWS::AccountId>:"
        "workload-identity-directory/default/workload-identity/strands_kokoro_agent-*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/"
        "anthropic.claude-haiku-4-5-20251001-v1:0]",
    },
    "KokoroAgentRuntime": set(),
}


def test_every_stack_passes_awssolutions_with_nothing_unacknowledged(synthesized: Synthesized) -> None:
    report = synthesized.validation_report()
    for plugin in report["pluginReports"]:
        assert plugin["violations"] == [], plugin["pluginName"]
    assert set(EXPECTED) == {*SPEECH_STACKS, *AGENT_STACKS}


@pytest.mark.parametrize("stack", [*SPEECH_STACKS, *AGENT_STACKS])
def test_acknowledgments_are_the_reviewed_ones_each_with_a_reason(
    synthesized: Synthesized, stack: str
) -> None:
    found = synthesized.acknowledgments(stack)
    rules = {rule.removeprefix("Annotation::") for by_rule in found.values() for rule in by_rule}
    assert rules == EXPECTED[stack]
    for by_rule in found.values():
        for rule, reason in by_rule.items():
            assert len(reason) >= MIN_REASON_CHARS, rule
            assert not reason.lower().startswith(("todo", "n/a", "none", "test")), rule


def test_an_acknowledgment_without_a_real_reason_is_refused() -> None:
    from aws_cdk import App, Stack

    with pytest.raises(ValueError, match="needs a real reason"):
        acknowledge(Stack(App(), "S"), "AwsSolutions-S1", "not needed")
