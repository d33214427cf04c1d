"""Model cache: copy the pinned, sha256-checked Kokoro weights from the local cache into the bucket.

A ``BucketDeployment`` from the local cache, not a build job: the bytes ``kokoro-weights fetch`` pinned
and a developer tested are the bytes the endpoint serves, it works where the hub is unreachable, and the
asset hash is the content hash (an unchanged cache uploads nothing), at the price of one upload per weight
revision. Only the manifest and the files it pins are copied (:func:`not_weights`): the cache also holds
local conversations, test models and fitted statistics. Each revision lands under
``kokoro-82m/<revision>/`` (the manifest's hash), so new weights make a new SageMaker model and the
endpoint rolls over; old revisions stay for rollback.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from aws_cdk import (
    Annotations,
    DefaultStackSynthesizer,
    Fn,
    Size,
    Stack,
)
from aws_cdk import (
    aws_s3 as s3,
)
from aws_cdk import (
    aws_s3_deployment as s3deploy,
)
from constructs import Construct

from cdk.config import WEIGHTS_PREFIX, ConfigError, SpeechConfig
from cdk.stacks.common import acknowledge
from cdk.stacks.log_groups import owned_log_group
from cdk.stacks.speech_foundation import WEIGHTS_BUCKET_ARN_EXPORT, WEIGHTS_BUCKET_NAME_EXPORT

MANIFEST_FILE = "manifest.json"
ONNX_FILES = frozenset({"config.json", "kokoro-v1.0.int8.onnx", "voices.npz"})
TORCH_FILES = frozenset({"config.json", "kokoro-v1_0.pth", "voices.npz"})
"""The cache layout of ``tts_container.weights.cache`` (not imported: cdk must not import the server)."""


def read_weights_manifest(weights_dir: Path) -> dict[str, dict[str, object]]:
    """The cache's ``files`` table, checked against the files on disk (sizes only: hashing is fetch's job).

    Raises :class:`ConfigError` telling the operator what to run when the cache is empty or stale.
    """
    fix = f"run `kokoro-weights fetch` (cache: {weights_dir}) or pass -c kokoro:weights_dir=<dir>"
    try:
        data = json.loads((weights_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
        files = data["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigError(f"no readable weights manifest in {weights_dir}: {fix}") from None
    if not isinstance(files, dict):
        raise ConfigError(f"weights manifest in {weights_dir} has no 'files' table: {fix}")
    for name, entry in files.items():
        path = weights_dir / name
        if not path.is_file() or not isinstance(entry, dict) or path.stat().st_size != entry.get("size"):
            raise ConfigError(f"{path} is missing or differs from its manifest entry: {fix}")
    if not (files.keys() >= ONNX_FILES or files.keys() >= TORCH_FILES):
        raise ConfigError(f"weights cache {weights_dir} holds neither the onnx nor the torch files: {fix}")
    return files


def not_weights(weights_dir: Path, files: dict[str, dict[str, object]]) -> list[str]:
    """Every entry of the cache directory that is neither the manifest nor a file it pins: the asset's
    exclude list (CDK's glob patterns; the entries are matched by name, and a kept file is never one)."""
    keep = {MANIFEST_FILE, *files}
    return sorted(entry.name for entry in weights_dir.iterdir() if entry.name not in keep)


def weights_revision(files: dict[str, dict[str, object]]) -> str:
    """Short, stable id of a weight set: the hash of the (name, sha256) pairs the manifest pins."""
    pinned = sorted((name, str(entry.get("sha256"))) for name, entry in files.items())
    return hashlib.sha256(json.dumps(pinned).encode()).hexdigest()[:16]


class ModelCacheStack(Stack):
    """Uploads the local weight cache to ``s3://<weights bucket>/kokoro-82m/<revision>/``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: SpeechConfig,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        files = read_weights_manifest(config.weights_dir)
        self.revision = weights_revision(files)
        self.key_prefix = f"{WEIGHTS_PREFIX}{self.revision}/"
        self.has_torch_weights = files.keys() >= TORCH_FILES
        if not self.has_torch_weights and config.instance_type.startswith(("ml.g", "ml.p")):
            Annotations.of(self).add_warning_v2(
                "kokoro:no-torch-weights",
                f"{config.instance_type} has a GPU but the cache holds no kokoro-v1_0.pth: the endpoint "
                "will run the int8 onnx engine on CPU. Run `kokoro-weights fetch --part torch` first.",
            )

        weights_bucket = s3.Bucket.from_bucket_attributes(
            self,
            "WeightsBucket",
            bucket_name=Fn.import_value(WEIGHTS_BUCKET_NAME_EXPORT),
            bucket_arn=Fn.import_value(WEIGHTS_BUCKET_ARN_EXPORT),
        )
        # The copy job's Lambda would otherwise log to a group Lambda creates on first run, kept forever.
        self.copy_job_logs = owned_log_group(self, "CopyJobLogs", days=config.log_retention_days)
        deployment = s3deploy.BucketDeployment(
            self,
            "Weights",
            sources=[
                s3deploy.Source.asset(str(config.weights_dir), exclude=not_weights(config.weights_dir, files))
            ],
            destination_bucket=weights_bucket,
            destination_key_prefix=self.key_prefix,
            prune=True,
            retain_on_delete=True,
            extract=True,
            # The fp32 checkpoint is ~330 MB: the zip and its extraction must both fit in /tmp.
            memory_limit=2048,
            ephemeral_storage_size=Size.gibibytes(4),
            log_group=self.copy_job_logs,
        )
        self.model_data_uri = f"s3://{weights_bucket.bucket_name}/{self.key_prefix}"
        self._acknowledge_deployment_handler(deployment)

    def _acknowledge_deployment_handler(self, deployment: s3deploy.BucketDeployment) -> None:
        """Findings on CDK's own copy job (a singleton Lambda the BucketDeployment construct owns).

        They are inherent to that construct (its policy is generated, not ours to narrow) and the job
        runs only during a deploy, with write access to nothing but the weights bucket.
        """
        handler = next(
            child for child in self.node.children if child.node.id.startswith("Custom::CDKBucketDeployment")
        )
        del deployment
        staging = _file_asset_bucket(self)
        reasons = {
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaBasicExecutionRole]": "CDK's BucketDeployment copy job only writes its own CloudWatch "
            "logs through this AWS managed policy; it has no other managed policy attached.",
            "AwsSolutions-L1": "The copy job's runtime is chosen and upgraded by aws-cdk-lib's "
            "BucketDeployment (with the AWS CLI layer it bundles); it runs only during deploys and "
            "serves no traffic.",
            "AwsSolutions-IAM5[Action::s3:GetObject*]": _COPY_JOB_ACTIONS,
            "AwsSolutions-IAM5[Action::s3:GetBucket*]": _COPY_JOB_ACTIONS,
            "AwsSolutions-IAM5[Action::s3:List*]": _COPY_JOB_ACTIONS,
            "AwsSolutions-IAM5[Action::s3:DeleteObject*]": _COPY_JOB_ACTIONS,
            "AwsSolutions-IAM5[Action::s3:Abort*]": _COPY_JOB_ACTIONS,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{staging}/*]": "The copy job reads the "
            "zipped weights from the CDK bootstrap asset bucket, whose object keys are content hashes.",
            f"AwsSolutions-IAM5[Resource::{WEIGHTS_BUCKET_ARN_EXPORT}/*]": "The copy job writes the weight "
            "files under the revision prefix of the weights bucket and prunes stale files there.",
        }
        for rule, reason in reasons.items():
            acknowledge(handler, rule, reason)


_COPY_JOB_ACTIONS = (
    "Generated by BucketDeployment's grantRead/grantReadWrite for the copy job (aws s3 sync with prune); "
    "the resources are only the asset bucket and the weights bucket."
)


def _file_asset_bucket(stack: Stack) -> str:
    """The bootstrap file-asset bucket name as cdk-nag renders it (pseudo parameters in angle brackets)."""
    qualifier = stack.node.try_get_context("@aws-cdk/core:bootstrapQualifier") or (
        DefaultStackSynthesizer.DEFAULT_QUALIFIER
    )
    name = DefaultStackSynthesizer.DEFAULT_FILE_ASSETS_BUCKET_NAME.replace("${Qualifier}", str(qualifier))
    return name.replace("${AWS::AccountId}", "<AWS::AccountId>").replace("${AWS::Region}", "<AWS::Region>")
