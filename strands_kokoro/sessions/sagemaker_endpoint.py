"""Where SageMaker's bidirectional stream is served: the regional runtime host of the region's AWS
partition, on port 8443 (the SDK's endpoint rules, reproduced with botocore's partition data so a region
in no known partition is a coded error, not a wrong host)."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from strands_kokoro.errors import SessionErrorCode
from strands_kokoro.sessions.aws_credentials import SageMakerError

if TYPE_CHECKING:
    import botocore.loaders

__all__ = ["BIDI_PORT", "bidi_endpoint_uri", "partition_dns_suffix"]

BIDI_PORT = 8443
"""SageMaker serves bidirectional streams on the runtime host's port 8443, not 443."""


@functools.cache
def _default_loader() -> botocore.loaders.Loader:
    """botocore's data loader, made once: it caches what it has read (``partitions.json``)."""
    import botocore.loaders

    return botocore.loaders.create_loader()


def partition_dns_suffix(region: str, loader: botocore.loaders.Loader | None = None) -> str:
    """The DNS suffix of the partition that ``region`` belongs to, from botocore's ``partitions.json``.

    SageMaker's endpoint rules build the bidi host as ``runtime.sagemaker.{Region}.{dnsSuffix}:8443``
    with the suffix of ``aws.partition(Region)``: ``amazonaws.com`` in aws and aws-us-gov,
    ``amazonaws.com.cn`` in aws-cn, ``c2s.ic.gov`` in aws-iso, ``sc2s.sgov.gov`` in aws-iso-b, ... The
    match is botocore's own (listed region, else the partition's ``regionRegex``), so a new region in a
    known partition works before botocore lists it. The rules engine would fall back to ``aws`` for a
    region no partition matches; that builds a wrong host for a new partition, so it is a coded
    ``unknown_region`` instead (``endpoint_uri=`` remains the way to reach any host).
    """
    for partition in (loader or _default_loader()).load_data("partitions")["partitions"]:
        if region in partition["regions"] or re.fullmatch(partition["regionRegex"], region):
            return str(partition["outputs"]["dnsSuffix"])
    raise SageMakerError(
        SessionErrorCode.UNKNOWN_REGION,
        f"region {region!r} is in no AWS partition botocore knows; check the region, upgrade botocore, "
        "or pass endpoint_uri=...",
    )


def bidi_endpoint_uri(region: str, loader: botocore.loaders.Loader | None = None) -> str:
    """The bidi endpoint of ``region``: the regional runtime host in its partition, on port 8443."""
    return f"https://runtime.sagemaker.{region}.{partition_dns_suffix(region, loader)}:{BIDI_PORT}"
