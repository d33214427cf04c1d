"""Private S3 buckets and prefix-scoped access, built the same way by both foundation stacks.

Every bucket here is S3-encrypted, blocks public access, refuses plain HTTP and is retained on
destroy (S3 cannot delete a bucket that still holds objects); a role reaches one prefix of it only.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct


def private_bucket(scope: Construct, construct_id: str, **options: Any) -> s3.Bucket:
    """A bucket with the settings every bucket of this project has; ``options`` add the rest."""
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        removal_policy=RemovalPolicy.RETAIN,
        **options,
    )


def grant_prefix(
    role: iam.Role, bucket: s3.IBucket, prefix: str, *, actions: list[str], sid: str, list_sid: str
) -> None:
    """``actions`` on the objects under ``prefix``, and a listing of that prefix only: nothing else."""
    role.add_to_policy(
        iam.PolicyStatement(sid=sid, actions=actions, resources=[bucket.arn_for_objects(f"{prefix}*")])
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid=list_sid,
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
        )
    )
