"""The speech stacks as synthesized: bucket, least-privilege roles, image, endpoint, scaling, alarms."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from synth_support import Synthesized

# A full synth takes 20-60 s, several minutes on a loaded CI machine: more than the default 300 s.
pytestmark = pytest.mark.timeout(900)

FOUNDATION, CACHE, ENDPOINT = "KokoroSpeechFoundation", "KokoroModelCache", "KokoroSpeechEndpoint"


def template(synthesized: Synthesized, stack: str) -> Template:
    return Template.from_json(synthesized.template_json(stack))


def only(resources: dict[str, Any]) -> dict[str, Any]:
    assert len(resources) == 1, list(resources)
    return next(iter(resources.values()))


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
    assert actions(statements[0]) == {
        "sagemaker:InvokeEndpoint",
        "sagemaker:InvokeEndpointWithResponseStream",
        "sagemaker:InvokeEndpointWithBidirectionalStream",
    }
    assert rendered(statements[0]["Resource"]).endswith(':endpoint/kokoro-82m"]]}')


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


def test_autoscaling_tracks_concurrent_requests_with_bounds_and_cooldowns(synthesized: Synthesized) -> None:
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
    assert tracking == {
        "PredefinedMetricSpecification": {
            "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
        },
        "TargetValue": 4,
        "ScaleOutCooldown": 60,
        "ScaleInCooldown": 600,
    }
    assert not t.find_resources("AWS::IAM::Role")  # the endpoint stack creates no role at all


@pytest.mark.parametrize(
    ("metric", "statistic", "threshold"),
    [("Invocation5XXErrors", "Sum", 1), ("ModelLatency", "p90", 1_500_000)],
)
def test_alarms_watch_errors_and_first_audio_latency(
    synthesized: Synthesized, metric: str, statistic: str, threshold: int
) -> None:
    alarms = template(synthesized, ENDPOINT).find_resources("AWS::CloudWatch::Alarm")
    (alarm,) = [a["Properties"] for a in alarms.values() if a["Properties"]["MetricName"] == metric]
    assert alarm["Namespace"] == "AWS/SageMaker"
    assert alarm["Dimensions"] == [
        {"Name": "EndpointName", "Value": "kokoro-82m"},
        {"Name": "VariantName", "Value": "AllTraffic"},
    ]
    assert alarm.get("Statistic", alarm.get("ExtendedStatistic")) == statistic
    assert alarm["Threshold"] == threshold
    assert alarm["TreatMissingData"] == "notBreaching"
