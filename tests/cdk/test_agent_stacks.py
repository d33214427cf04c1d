"""The agent stacks as synthesized: AgentCore execution role, ARM64 image, runtime environment."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Template

from cdk.config import CONVERSATIONS_PREFIX, AgentConfig, ConfigError, agent_config
from cdk.stacks.agent_foundation import (
    CONVERSATION_OBJECT_ACTIONS,
    WORKLOAD_TOKEN_ACTIONS,
    AgentFoundationStack,
)
from cdk.stacks.common import SAGEMAKER_INVOKE_ACTIONS
from strands_kokoro.sessions import parse_sagemaker_endpoint
from tests.cdk.synth_support import PROFILE_MODEL_ID, Synthesized

# A full synth takes 20-60 s, several minutes on a loaded CI machine: more than the default 300 s.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
FOUNDATION, RUNTIME = "KokoroAgentFoundation", "KokoroAgentRuntime"


def statements_by_sid(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    policies = [r for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy"]
    assert len(policies) == 1
    return {s["Sid"]: s for s in policies[0]["Properties"]["PolicyDocument"]["Statement"]}


def as_set(value: str | list[str]) -> set[str]:
    return {value} if isinstance(value, str) else set(value)


def test_execution_role_is_assumable_only_by_agentcore_for_this_account(synthesized: Synthesized) -> None:
    roles = Template.from_json(synthesized.template_json(FOUNDATION)).find_resources("AWS::IAM::Role")
    (role,) = roles.values()
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "bedrock-agentcore.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source_arn = json.dumps(trust["Condition"]["ArnLike"]["aws:SourceArn"])
    assert ':bedrock-agentcore:", {"Ref": "AWS::Region"}' in source_arn


def test_execution_role_invokes_one_model_and_one_endpoint(synthesized: Synthesized) -> None:
    by_sid = statements_by_sid(synthesized.template_json(FOUNDATION))
    assert set(by_sid) == {
        "InvokeModel",
        "Speak",
        "PullImage",
        "EcrLogin",
        "RuntimeLogGroups",
        "RuntimeLogStreams",
        "DescribeLogGroups",
        "WorkloadAccessToken",
        "Traces",
        "Metrics",
        "Conversations",
        "ListConversations",
    }
    model = by_sid["InvokeModel"]
    assert as_set(model["Action"]) == {"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}
    resources = [json.dumps(r) for r in model["Resource"]]
    assert len(resources) == 2
    assert f':inference-profile/{PROFILE_MODEL_ID}"' in resources[0]
    assert ':bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0"' in resources[1]

    speak = by_sid["Speak"]
    assert as_set(speak["Action"]) == {
        "sagemaker:InvokeEndpointWithBidirectionalStream",
        "sagemaker:InvokeEndpoint",
    }
    assert as_set(speak["Action"]) == set(SAGEMAKER_INVOKE_ACTIONS)
    assert json.dumps(speak["Resource"]).endswith(':endpoint/kokoro-82m"]]}')

    assert "repository/cdk-hnb659fds-container-assets-" in json.dumps(by_sid["PullImage"]["Resource"])
    assert "/aws/bedrock-agentcore/runtimes/*" in json.dumps(by_sid["RuntimeLogGroups"]["Resource"])
    assert by_sid["Metrics"]["Condition"] == {"StringEquals": {"cloudwatch:namespace": "bedrock-agentcore"}}
    # "*" only where IAM has no resource-level permissions for the action.
    wildcard = {sid for sid, s in by_sid.items() if s["Resource"] == "*"}
    assert wildcard == {"EcrLogin", "Traces", "Metrics"}
    assert as_set(by_sid["Traces"]["Action"]) <= {
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "xray:GetSamplingRules",
        "xray:GetSamplingTargets",
    }


def test_foundation_model_id_is_scoped_to_this_region_only() -> None:
    app = App()
    stack = AgentFoundationStack(
        app, "Foundation", config=AgentConfig(bedrock_model_id="amazon.nova-lite-v1:0")
    )
    by_sid = statements_by_sid(Template.from_stack(stack).to_json())
    (resource,) = [by_sid["InvokeModel"]["Resource"]]
    rendered = json.dumps(resource)
    assert ':bedrock:", {"Ref": "AWS::Region"}, "::foundation-model/amazon.nova-lite-v1:0"' in rendered
    assert "inference-profile" not in rendered and "bedrock:*" not in rendered


def test_execution_role_has_what_the_agentcore_runtime_guide_lists(synthesized: Synthesized) -> None:
    """logs:DescribeLogGroups on the region's groups; workload access tokens for this runtime only."""
    by_sid = statements_by_sid(synthesized.template_json(FOUNDATION))
    describe = by_sid["DescribeLogGroups"]
    assert as_set(describe["Action"]) == {"logs:DescribeLogGroups"}
    rendered = json.dumps(describe["Resource"])
    assert rendered.endswith(':log-group:*"]]}')
    assert ':logs:", {"Ref": "AWS::Region"}, ":", {"Ref": "AWS::AccountId"}' in rendered

    tokens = by_sid["WorkloadAccessToken"]
    assert (
        as_set(tokens["Action"])
        == set(WORKLOAD_TOKEN_ACTIONS)
        == {
            "bedrock-agentcore:GetWorkloadAccessToken",
            "bedrock-agentcore:GetWorkloadAccessTokenForJWT",
            "bedrock-agentcore:GetWorkloadAccessTokenForUserId",
        }
    )
    directory, identities = (json.dumps(r) for r in tokens["Resource"])
    for arn in (directory, identities):
        assert ':bedrock-agentcore:", {"Ref": "AWS::Region"}, ":", {"Ref": "AWS::AccountId"}' in arn
    assert directory.endswith(':workload-identity-directory/default"]]}')
    assert identities.endswith(
        ':workload-identity-directory/default/workload-identity/strands_kokoro_agent-*"]]}'
    )


def test_workload_identity_wildcard_follows_the_runtime_name() -> None:
    config = AgentConfig(bedrock_model_id="amazon.nova-lite-v1:0", runtime_name="other_agent")
    stack = AgentFoundationStack(App(), "Foundation", config=config)
    by_sid = statements_by_sid(Template.from_stack(stack).to_json())
    assert json.dumps(by_sid["WorkloadAccessToken"]["Resource"][1]).endswith(
        '/workload-identity/other_agent-*"]]}'
    )


@pytest.mark.parametrize("bad", ["", "has space", "x", "a" * 300])
def test_bad_model_ids_are_refused_before_any_construct(bad: str) -> None:
    with pytest.raises(ConfigError):
        AgentConfig(bedrock_model_id=bad)


def test_agent_image_is_arm64_from_the_agent_dockerfile(synthesized: Synthesized) -> None:
    (image,) = synthesized.assets(RUNTIME)["dockerImages"].values()
    source = image["source"]
    assert source["dockerFile"] == "agentcore_app/Dockerfile"
    assert source["platform"] == "linux/arm64"
    staged = synthesized.outdir / source["directory"]
    assert (staged / "agentcore_app" / "Dockerfile").is_file()
    assert (staged / "strands_kokoro").is_dir() and (staged / "kokoro_serving").is_dir()
    for unneeded in ("tts_container", ".venv", "tests", "cdk"):
        assert not (staged / unneeded).exists(), unneeded


def test_runtime_points_at_the_bedrock_model_and_the_speech_endpoint(synthesized: Synthesized) -> None:
    t = Template.from_json(synthesized.template_json(RUNTIME))
    (runtime,) = t.find_resources("AWS::BedrockAgentCore::Runtime").values()
    props = runtime["Properties"]
    region = {"Ref": "AWS::Region"}
    conversations = {"Fn::ImportValue": "KokoroAgentFoundation:ExportsOutputRefConversationsBC91B70D84A67B3C"}
    assert props["EnvironmentVariables"] == {
        "STRANDS_KOKORO_MODEL": f"bedrock:{PROFILE_MODEL_ID}",
        "STRANDS_KOKORO_SPEECH_ENDPOINT": {"Fn::Join": ["", ["sagemaker:kokoro-82m?region=", region]]},
        "STRANDS_KOKORO_CONVERSATIONS": {"Fn::Join": ["", ["s3://", conversations, "/conversations"]]},
        "STRANDS_KOKORO_CONVERSATION_MAX_AGE_S": "86400",
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
    }
    assert props["ProtocolConfiguration"] == "HTTP"
    assert props["NetworkConfiguration"] == {"NetworkMode": "PUBLIC"}
    assert "AgentCoreExecutionRole" in json.dumps(props["RoleArn"])
    assert "cdk-hnb659fds-container-assets" in json.dumps(props["AgentRuntimeArtifact"])
    (endpoint,) = t.find_resources("AWS::BedrockAgentCore::RuntimeEndpoint").values()
    assert endpoint["Properties"]["AgentRuntimeId"] == {"Fn::GetAtt": ["Runtime", "AgentRuntimeId"]}
    assert endpoint["Properties"]["AgentRuntimeVersion"] == {"Fn::GetAtt": ["Runtime", "AgentRuntimeVersion"]}
    # The agent stacks name the endpoint instead of importing the speech stacks' exports.
    assert "KokoroSpeech" not in json.dumps(synthesized.template_json(RUNTIME))
    assert "KokoroSpeech" not in json.dumps(synthesized.template_json(FOUNDATION))


def resolve_region(value: Any, region: str) -> str:
    """What CloudFormation makes of a rendered value in ``region`` (only Ref AWS::Region and Fn::Join)."""
    if isinstance(value, str):
        return value
    if value == {"Ref": "AWS::Region"}:
        return region
    separator, parts = value["Fn::Join"]
    return str(separator).join(resolve_region(part, region) for part in parts)


def test_deployed_environment_gives_both_clients_the_stack_region(synthesized: Synthesized) -> None:
    """The speech session reads ?region= (botocore alone knows only AWS_DEFAULT_REGION); Bedrock reads
    AWS_REGION. As deployed in eu-west-1, every one of them says eu-west-1."""
    (runtime,) = (
        Template.from_json(synthesized.template_json(RUNTIME))
        .find_resources("AWS::BedrockAgentCore::Runtime")
        .values()
    )
    regional = ("AWS_REGION", "AWS_DEFAULT_REGION", "STRANDS_KOKORO_SPEECH_ENDPOINT")
    env = {
        k: resolve_region(v, "eu-west-1")
        for k, v in runtime["Properties"]["EnvironmentVariables"].items()
        if k in regional
    }
    assert env["AWS_REGION"] == env["AWS_DEFAULT_REGION"] == "eu-west-1"
    assert parse_sagemaker_endpoint(env["STRANDS_KOKORO_SPEECH_ENDPOINT"]) == (
        "kokoro-82m",
        {"region": "eu-west-1"},
    )


def test_runtime_log_groups_expire_and_exist_before_the_endpoint_serves(synthesized: Synthesized) -> None:
    t = Template.from_json(synthesized.template_json(RUNTIME))
    groups = t.find_resources("AWS::Logs::LogGroup")
    assert len(groups) == 2
    suffixes = set()
    for group in groups.values():
        assert group["Properties"]["RetentionInDays"] == 30
        assert group["DeletionPolicy"] == "Delete"
        prefix, runtime_id, suffix = group["Properties"]["LogGroupName"]["Fn::Join"][1]
        assert prefix == "/aws/bedrock-agentcore/runtimes/"
        assert runtime_id == {"Fn::GetAtt": ["Runtime", "AgentRuntimeId"]}
        suffixes.add(suffix)
    assert suffixes == {"-DEFAULT", "-live"}  # AgentCore's DEFAULT endpoint and the stack's own
    (endpoint,) = t.find_resources("AWS::BedrockAgentCore::RuntimeEndpoint").values()
    assert set(endpoint["DependsOn"]) == set(groups)


def test_log_retention_is_configurable_and_checked() -> None:
    context = {"kokoro:bedrock_model_id": PROFILE_MODEL_ID, "kokoro:log_retention_days": "90"}
    config = agent_config(context.get)
    assert config is not None and config.log_retention_days == 90
    assert AgentConfig(bedrock_model_id=PROFILE_MODEL_ID).log_retention_days == 30
    with pytest.raises(ConfigError, match="retention"):
        agent_config({**context, "kokoro:log_retention_days": "31"}.get)


# ------------------------------------------------------------------------------------ conversations


def conversations_bucket(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    buckets = {
        name: r
        for name, r in template["Resources"].items()
        if r["Type"] == "AWS::S3::Bucket" and name.startswith("Conversations")
    }
    assert len(buckets) == 1
    return next(iter(buckets.items()))


def test_the_role_may_use_the_conversations_prefix_and_nothing_else_of_any_bucket(
    synthesized: Synthesized,
) -> None:
    template = synthesized.template_json(FOUNDATION)
    bucket_id, _ = conversations_bucket(template)
    by_sid = statements_by_sid(template)
    objects = by_sid["Conversations"]
    assert (
        as_set(objects["Action"])
        == set(CONVERSATION_OBJECT_ACTIONS)
        == {
            "s3:GetObject",
            "s3:PutObject",
            "s3:DeleteObject",
        }
    )
    assert objects["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/conversations/*"]]}
    listing = by_sid["ListConversations"]
    assert as_set(listing["Action"]) == {"s3:ListBucket"}
    assert listing["Resource"] == {"Fn::GetAtt": [bucket_id, "Arn"]}
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["conversations/", "conversations/*"]}}
    # No other statement names S3 at all.
    others = [s for sid, s in by_sid.items() if sid not in ("Conversations", "ListConversations")]
    assert not any("s3:" in json.dumps(s["Action"]) for s in others)
    assert CONVERSATIONS_PREFIX == "conversations/"


def test_conversations_bucket_is_private_encrypted_logged_and_expires_conversations(
    synthesized: Synthesized,
) -> None:
    template = synthesized.template_json(FOUNDATION)
    bucket_id, bucket = conversations_bucket(template)
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ] == {"SSEAlgorithm": "AES256"}
    assert "LoggingConfiguration" in props
    rules = {rule["Id"]: rule for rule in props["LifecycleConfiguration"]["Rules"]}
    assert rules["ExpireConversations"]["Prefix"] == "conversations/"
    assert rules["ExpireConversations"]["ExpirationInDays"] == 2
    assert bucket["DeletionPolicy"] == "Retain"
    policies = Template.from_json(template).find_resources("AWS::S3::BucketPolicy")
    ssl_only = [p for p in policies.values() if p["Properties"]["Bucket"] == {"Ref": bucket_id}]
    assert "aws:SecureTransport" in json.dumps(ssl_only)


def test_the_app_forgets_a_conversation_a_day_before_the_bucket_deletes_it() -> None:
    from agentcore_app.conversation.settings import CONVERSATIONS_ENV, MAX_AGE_ENV
    from cdk.stacks.agent_runtime import CONVERSATION_MAX_AGE_ENV
    from cdk.stacks.agent_runtime import CONVERSATIONS_ENV as RUNTIME_CONVERSATIONS_ENV

    assert (RUNTIME_CONVERSATIONS_ENV, CONVERSATION_MAX_AGE_ENV) == (CONVERSATIONS_ENV, MAX_AGE_ENV)
    config = AgentConfig(bedrock_model_id=PROFILE_MODEL_ID, conversation_retention_days=7)
    assert config.conversation_max_age_s == 6 * 86_400
    context = {"kokoro:bedrock_model_id": PROFILE_MODEL_ID, "kokoro:conversation_retention_days": "5"}
    parsed = agent_config(context.get)
    assert parsed is not None and parsed.conversation_retention_days == 5
    with pytest.raises(ConfigError, match="at least 2"):
        AgentConfig(bedrock_model_id=PROFILE_MODEL_ID, conversation_retention_days=1)
