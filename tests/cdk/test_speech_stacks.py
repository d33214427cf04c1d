"""The speech stacks as synthesized: bucket, least-privilege roles, image, endpoint, scaling, options.

Their alarms, metric and dashboard: ``test_speech_observability.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from cdk.app import cdk_json_context
from cdk.config import ConfigError, SpeechConfig, speech_config
from cdk.stacks.common import SAGEMAKER_INVOKE_ACTIONS
from cdk.stacks.speech_endpoint import ROOT_USER_BUILD_ARG, SpeechEndpointStack
from tests.cdk.synth_support import (
    CACHE,
    ENDPOINT,
    FOUNDATION,
    WEIGHT_FILES,
    Synthesized,
    alarms_by_metric,
    only,
    template,
)

# A full synth takes 20-60 s, several minutes on a loaded CI machine: more than the default 300 s.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def policy_statements(synthesized: Synthesized, stack: str, role_prefix: str) -> list[dict[str, Any]]:
    """Every statement of the policies attached to the role whose logical id starts with ``role_prefix``."""
    resources = synthesized.template_json(stack)["Resources"]
    statements = []
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        roles = [ref["Ref"] for ref in resource["Properties"]["Roles"]]
        if any(role.startswith(role_prefix) for role in roles):
            statements += resource["Properties"]["PolicyDocument"]["Statement"]
    assert statements, f"no policy attached to {role_prefix}"
    return statements


def actions(statement: dict[str, Any]) -> set[str]:
    value = statement["Action"]
    return {value} if isinstance(value, str) else set(value)


def rendered(value: Any) -> str:
    """A resource expression as one string, to check what it points at."""
    return json.dumps(value)


def test_weights_bucket_is_encrypted_private_tls_only_logged_and_retained(synthesized: Synthesized) -> None:
    t = template(synthesized, FOUNDATION)
    buckets = t.find_resources("AWS::S3::Bucket")
    weights = next(
        body for logical, body in buckets.items() if logical.startswith("Weights") and "Logs" not in logical
    )
    assert weights["DeletionPolicy"] == "Retain"
    props = weights["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ] == {"SSEAlgorithm": "AES256"}
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["LoggingConfiguration"]["LogFilePrefix"] == "weights/"
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    for body in buckets.values():
        assert body["DeletionPolicy"] == "Retain"
    t.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                        )
                    ]
                )
            }
        },
    )
    assert len(t.find_resources("AWS::S3::BucketPolicy")) == 2  # both buckets refuse plain HTTP


def test_sagemaker_role_reads_only_the_weights_prefix_pulls_its_repo_and_writes_its_logs(
    synthesized: Synthesized,
) -> None:
    t = template(synthesized, FOUNDATION)
    role = only(
        {
            k: v
            for k, v in t.find_resources("AWS::IAM::Role").items()
            if k.startswith("SageMakerExecutionRole")
        }
    )
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert trust["Action"] == "sts:AssumeRole" and "Condition" not in trust

    by_sid = {s["Sid"]: s for s in policy_statements(synthesized, FOUNDATION, "SageMakerExecutionRole")}
    assert set(by_sid) == {"ReadWeightsPrefix", "ListWeightsPrefix", "PullImage", "EcrLogin", "EndpointLogs"}
    assert actions(by_sid["ReadWeightsPrefix"]) == {"s3:GetObject"}
    assert rendered(by_sid["ReadWeightsPrefix"]["Resource"]).endswith('"/kokoro-82m/*"]]}')
    assert by_sid["ListWeightsPrefix"]["Condition"] == {
        "StringLike": {"s3:prefix": ["kokoro-82m/", "kokoro-82m/*"]}
    }
    assert actions(by_sid["PullImage"]) == {
        "ecr:BatchCheckLayerAvailability",
        "ecr:BatchGetImage",
        "ecr:GetDownloadUrlForLayer",
    }
    assert "repository/cdk-hnb659fds-container-assets-" in rendered(by_sid["PullImage"]["Resource"])
    # GetAuthorizationToken is the one action AWS offers no narrower resource for.
    assert actions(by_sid["EcrLogin"]) == {"ecr:GetAuthorizationToken"}
    wildcard = [s for s in by_sid.values() if s["Resource"] == "*"]
    assert wildcard == [by_sid["EcrLogin"]]
    logs = rendered(by_sid["EndpointLogs"]["Resource"])
    assert "log-group:/aws/sagemaker/Endpoints/kokoro-82m" in logs
    assert "log-group:*" not in logs


def test_pull_permission_names_the_repository_the_image_asset_is_published_to(
    synthesized: Synthesized,
) -> None:
    by_sid = {s["Sid"]: s for s in policy_statements(synthesized, FOUNDATION, "SageMakerExecutionRole")}
    image = only(synthesized.assets(ENDPOINT)["dockerImages"])
    repository = only(image["destinations"])["repositoryName"]
    assert by_sid["PullImage"]["Resource"]["Fn::Sub"].endswith(f":repository/{repository}")


def test_client_role_may_only_invoke_the_endpoint(synthesized: Synthesized) -> None:
    statements = policy_statements(synthesized, FOUNDATION, "SpeechClientRole")
    assert len(statements) == 1
    # No "InvokeEndpointWithResponseStream": sagemaker:InvokeEndpoint authorises that API.
    assert actions(statements[0]) == {
        "sagemaker:InvokeEndpoint",
        "sagemaker:InvokeEndpointWithBidirectionalStream",
    }
    assert rendered(statements[0]["Resource"]).endswith(':endpoint/kokoro-82m"]]}')


def test_speech_client_role_and_agent_role_invoke_with_the_same_actions(synthesized: Synthesized) -> None:
    (client,) = policy_statements(synthesized, FOUNDATION, "SpeechClientRole")
    agent = [
        statement
        for resource in synthesized.template_json("KokoroAgentFoundation")["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Sid") == "Speak"
    ]
    assert len(agent) == 1
    assert actions(client) == actions(agent[0]) == set(SAGEMAKER_INVOKE_ACTIONS)


def test_model_cache_copies_the_manifest_revision_and_keeps_it(synthesized: Synthesized) -> None:
    t = template(synthesized, CACHE)
    deployment = only(t.find_resources("Custom::CDKBucketDeployment"))["Properties"]
    prefix = deployment["DestinationBucketKeyPrefix"]
    assert (
        prefix.startswith("kokoro-82m/") and prefix.endswith("/") and len(prefix) == len("kokoro-82m/") + 17
    )
    assert deployment["RetainOnDelete"] is True
    assert deployment["Prune"] is True
    assert deployment["DestinationBucketName"] == {"Fn::ImportValue": "strands-kokoro-weights-bucket-name"}
    t.has_resource_properties(
        "AWS::Lambda::Function", {"MemorySize": 2048, "EphemeralStorage": {"Size": 4096}}
    )
    # The endpoint's model reads exactly the prefix the cache writes.
    model = only(template(synthesized, ENDPOINT).find_resources("AWS::SageMaker::Model"))["Properties"]
    uri = model["PrimaryContainer"]["ModelDataSource"]["S3DataSource"]["S3Uri"]
    assert rendered(uri).endswith(f'"/{prefix}"]]}}')


def test_model_cache_uploads_the_pinned_weights_and_nothing_else(synthesized: Synthesized) -> None:
    sources = [synthesized.outdir / a["source"]["path"] for a in synthesized.assets(CACHE)["files"].values()]
    (staged,) = [path for path in sources if (path / "manifest.json").is_file()]
    uploaded = sorted(str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file())
    # Conversations, the Whisper model, fitted statistics and half-done downloads stay on this machine.
    assert uploaded == sorted(["manifest.json", *WEIGHT_FILES])


def test_tts_image_asset_is_the_server_dockerfile_for_x86_without_baked_weights(
    synthesized: Synthesized,
) -> None:
    image = only(synthesized.assets(ENDPOINT)["dockerImages"])["source"]
    assert image["dockerFile"] == "tts_container/Dockerfile"
    assert image["platform"] == "linux/amd64"
    assert image["dockerBuildArgs"] == {"BAKE_WEIGHTS": "0"}
    staged = synthesized.outdir / image["directory"]
    assert (staged / "tts_container" / "Dockerfile").is_file()
    assert not (staged / ".venv").exists() and not (staged / "tests").exists()
    dockerfile = (staged / "tts_container" / "Dockerfile").read_text()
    assert "LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true" in dockerfile


def test_model_is_network_isolated_and_reads_weights_from_the_sagemaker_model_dir(
    synthesized: Synthesized,
) -> None:
    model = only(template(synthesized, ENDPOINT).find_resources("AWS::SageMaker::Model"))["Properties"]
    assert model["EnableNetworkIsolation"] is True
    container = model["PrimaryContainer"]
    assert container["ModelDataSource"]["S3DataSource"]["S3DataType"] == "S3Prefix"
    assert container["ModelDataSource"]["S3DataSource"]["CompressionType"] == "None"
    assert container["Environment"]["STRANDS_KOKORO_CACHE"] == "/opt/ml/model"
    assert "cdk-hnb659fds-container-assets" in rendered(container["Image"])
    assert "ImportValue" in rendered(model["ExecutionRoleArn"])


def test_endpoint_config_defaults_to_one_g5_xlarge(synthesized: Synthesized) -> None:
    t = template(synthesized, ENDPOINT)
    variant = only(t.find_resources("AWS::SageMaker::EndpointConfig"))["Properties"]["ProductionVariants"][0]
    assert variant["InstanceType"] == "ml.g5.xlarge"
    assert variant["InitialInstanceCount"] == 1
    assert variant["VariantName"] == "AllTraffic"
    t.has_resource_properties("AWS::SageMaker::Endpoint", {"EndpointName": "kokoro-82m"})


def test_endpoint_routes_new_sessions_to_the_least_busy_instance(synthesized: Synthesized) -> None:
    t = template(synthesized, ENDPOINT)
    variant = only(t.find_resources("AWS::SageMaker::EndpointConfig"))["Properties"]["ProductionVariants"][0]
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}


def test_endpoint_logs_expire_and_the_group_exists_before_the_endpoint(synthesized: Synthesized) -> None:
    t = template(synthesized, ENDPOINT)
    groups = t.find_resources("AWS::Logs::LogGroup")
    logical, group = only(groups), next(iter(groups))
    assert logical["Properties"]["LogGroupName"] == "/aws/sagemaker/Endpoints/kokoro-82m"
    assert logical["Properties"]["RetentionInDays"] == 30
    # Deleted with the stack: a retained group of the same fixed name would break the next deploy.
    assert logical["DeletionPolicy"] == "Delete"
    endpoint = only(t.find_resources("AWS::SageMaker::Endpoint"))
    assert group in endpoint["DependsOn"]
    # The SageMaker role may write exactly there.
    by_sid = {s["Sid"]: s for s in policy_statements(synthesized, FOUNDATION, "SageMakerExecutionRole")}
    assert "log-group:/aws/sagemaker/Endpoints/kokoro-82m" in rendered(by_sid["EndpointLogs"]["Resource"])


def test_copy_job_logs_to_a_group_that_expires(synthesized: Synthesized) -> None:
    t = template(synthesized, CACHE)
    group_id, group = next(iter(t.find_resources("AWS::Logs::LogGroup").items()))
    assert len(t.find_resources("AWS::Logs::LogGroup")) == 1
    assert group["Properties"]["RetentionInDays"] == 30
    handler = only(t.find_resources("AWS::Lambda::Function"))
    assert handler["Properties"]["LoggingConfig"] == {"LogGroup": {"Ref": group_id}}


def test_autoscaling_tracks_the_measured_capacity_in_use_with_bounds_and_cooldowns(
    synthesized: Synthesized,
) -> None:
    t = template(synthesized, ENDPOINT)
    target = only(t.find_resources("AWS::ApplicationAutoScaling::ScalableTarget"))
    assert "RoleARN" not in target["Properties"]
    assert {k: v for k, v in target["Properties"].items() if k != "Tags"} == {
        "ServiceNamespace": "sagemaker",
        "ResourceId": "endpoint/kokoro-82m/variant/AllTraffic",
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        "MinCapacity": 1,
        "MaxCapacity": 4,
    }  # no RoleARN: Application Auto Scaling's service-linked role does the scaling
    assert any(dep.startswith("Endpoint") for dep in target["DependsOn"])
    policy = only(t.find_resources("AWS::ApplicationAutoScaling::ScalingPolicy"))["Properties"]
    tracking = policy["TargetTrackingScalingPolicyConfiguration"]
    # The metric the model servers' load line makes (test_speech_observability.py), named exactly as the
    # metric filter publishes it: no dimensions, no unit.
    assert tracking == {
        "CustomizedMetricSpecification": {
            "Namespace": "StrandsKokoro/kokoro-82m",
            "MetricName": "ListenerUtilization",
            "Statistic": "Average",
        },
        "TargetValue": 0.7,
        "ScaleOutCooldown": 60,
        "ScaleInCooldown": 600,
    }
    published = {
        (m["MetricNamespace"], m["MetricName"])
        for f in t.find_resources("AWS::Logs::MetricFilter").values()
        for m in f["Properties"]["MetricTransformations"]
    }
    assert ("StrandsKokoro/kokoro-82m", "ListenerUtilization") in published
    assert not t.find_resources("AWS::IAM::Role")  # the endpoint stack creates no role at all


ALTERNATIVE = {
    "kokoro:network_isolation": "false",
    "kokoro:tts_run_as_root": "true",
    "kokoro:log_retention_days": "90",
    "kokoro:first_audio_alarm_ms": "800",
    "kokoro:target_utilization": "0.6",
}


@pytest.fixture(scope="module")
def alternative(fake_weights_cache: Path) -> Iterator[Template]:
    """The endpoint stack alone, with every option this module can switch away from its default."""
    config = speech_config({**ALTERNATIVE, "kokoro:weights_dir": str(fake_weights_cache)}.get)
    app = App(context=cdk_json_context())
    role = iam.Role.from_role_arn(Stack(app, "Roles"), "R", "arn:aws:iam::123456789012:role/sagemaker")
    stack = SpeechEndpointStack(
        app, "Alternative", config=config, execution_role=role, model_data_uri="s3://bucket/kokoro-82m/x/"
    )
    yield Template.from_stack(stack)


def test_options_turn_isolation_off_run_as_root_and_change_retention_and_alarms(
    alternative: Template, synthesized: Synthesized
) -> None:
    model = only(alternative.find_resources("AWS::SageMaker::Model"))["Properties"]
    assert model["EnableNetworkIsolation"] is False
    group = only(alternative.find_resources("AWS::Logs::LogGroup"))["Properties"]
    assert group["RetentionInDays"] == 90
    alarms = alarms_by_metric(alternative)
    assert alarms["FirstAudioLatency"]["Threshold"] == 800
    assert alarms["ListenerUtilization"]["Threshold"] == 1  # full is full, whatever the target
    policy = only(alternative.find_resources("AWS::ApplicationAutoScaling::ScalingPolicy"))["Properties"]
    assert policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] == 0.6
    # The default image builds to run as the unprivileged user; the option rebuilds it as root.
    default_args = only(synthesized.assets(ENDPOINT)["dockerImages"])["source"]["dockerBuildArgs"]
    assert ROOT_USER_BUILD_ARG not in default_args


def test_run_as_root_is_a_build_argument_of_the_image(fake_weights_cache: Path) -> None:
    from cdk.stacks.speech_endpoint import tts_build_args

    config = speech_config({**ALTERNATIVE, "kokoro:weights_dir": str(fake_weights_cache)}.get)
    assert tts_build_args(config) == {"BAKE_WEIGHTS": "0", ROOT_USER_BUILD_ARG: "0"}
    assert tts_build_args(SpeechConfig(weights_dir=fake_weights_cache)) == {"BAKE_WEIGHTS": "0"}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("kokoro:log_retention_days", "10", "retention"),
        ("kokoro:network_isolation", "maybe", "network_isolation"),
        ("kokoro:client_error_alarm_pct", "0", "client error"),
        # a share of the measured capacity: 0 never serves, 1 is where servers already refuse
        ("kokoro:target_utilization", "0", "target utilization"),
        ("kokoro:target_utilization", "1", "target utilization"),
        ("kokoro:target_utilization", "70", "target utilization"),
        ("kokoro:target_utilization", "nan", "target utilization"),
        ("kokoro:target_utilization", "most", "target_utilization"),
        # settings that no longer exist say what replaced them instead of being ignored
        ("kokoro:target_concurrency", "4", "target_utilization"),
        ("kokoro:saturation_factor", "1.5", "no longer read"),
    ],
)
def test_bad_options_are_refused_before_any_construct(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        speech_config({key: value}.get)


def test_boolean_options_read_cdk_json_booleans_and_cli_strings() -> None:
    assert speech_config({"kokoro:network_isolation": False}.get).network_isolation is False
    assert speech_config({"kokoro:network_isolation": "False"}.get).network_isolation is False
    assert speech_config({"kokoro:network_isolation": "true"}.get).network_isolation is True
    assert SpeechConfig().network_isolation is True
