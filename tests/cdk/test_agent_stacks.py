"""The agent stacks as synthesized: AgentCore execution role, ARM64 image, runtime environment."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Template
from synth_support import PROFILE_MODEL_ID, Synthesized

from cdk.config import AgentConfig, ConfigError
from cdk.stacks.agent_foundation import AgentFoundationStack

# A full synth takes 20-60 s, several minutes on a loaded CI machine: more than the default 300 s.
pytestmark = pytest.mark.timeout(900)

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
        "Traces",
        "Metrics",
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
    assert (staged / "strands_kokoro").is_dir()
    for unneeded in ("tts_container", ".venv", "tests", "cdk"):
        assert not (staged / unneeded).exists(), unneeded


def test_runtime_points_at_the_bedrock_model_and_the_speech_endpoint(synthesized: Synthesized) -> None:
    t = Template.from_json(synthesized.template_json(RUNTIME))
    (runtime,) = t.find_resources("AWS::BedrockAgentCore::Runtime").values()
    props = runtime["Properties"]
    assert props["EnvironmentVariables"] == {
        "STRANDS_KOKORO_MODEL": f"bedrock:{PROFILE_MODEL_ID}",
        "STRANDS_KOKORO_SPEECH_ENDPOINT": "sagemaker:kokoro-82m",
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
