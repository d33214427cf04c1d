"""The bidi endpoint host in every AWS partition: ``runtime.sagemaker.{region}.{dnsSuffix}:8443``.

The expected suffixes are written out here, not read from botocore, so a change in botocore's partition
data (or a return to a hard-coded ``amazonaws.com``) fails a test instead of passing silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import botocore.session
import pytest

from strands_kokoro.protocol import SynthesisCompleted, SynthesizeRequest
from strands_kokoro.sessions.aws_credentials import SageMakerError
from strands_kokoro.sessions.sagemaker import SageMakerBidiSession
from strands_kokoro.sessions.sagemaker_endpoint import bidi_endpoint_uri, partition_dns_suffix
from tests.model_server_process import RunningServer
from tests.strands_kokoro.standins.sagemaker_bidi_router import SageMakerBidiRouter

PARTITIONS = [
    # (partition, a region botocore lists, its DNS suffix)
    ("aws", "us-east-1", "amazonaws.com"),
    ("aws", "eu-west-1", "amazonaws.com"),
    ("aws-cn", "cn-north-1", "amazonaws.com.cn"),
    ("aws-us-gov", "us-gov-west-1", "amazonaws.com"),
    ("aws-iso", "us-iso-east-1", "c2s.ic.gov"),
    ("aws-iso-b", "us-isob-east-1", "sc2s.sgov.gov"),
    ("aws-iso-e", "eu-isoe-west-1", "cloud.adc-e.uk"),
    ("aws-iso-f", "us-isof-south-1", "csp.hci.ic.gov"),
    ("aws-eusc", "eusc-de-east-1", "amazonaws.eu"),
]


@pytest.mark.parametrize(("partition", "region", "suffix"), PARTITIONS)
def test_bidi_endpoint_uses_the_partitions_dns_suffix_on_port_8443(
    partition: str, region: str, suffix: str
) -> None:
    assert botocore.session.get_session().get_partition_for_region(region) == partition
    assert partition_dns_suffix(region) == suffix
    assert bidi_endpoint_uri(region) == f"https://runtime.sagemaker.{region}.{suffix}:8443"


@pytest.mark.parametrize(
    ("region", "suffix"),
    [
        ("cn-southwest-9", "amazonaws.com.cn"),
        ("us-isob-north-7", "sc2s.sgov.gov"),
        ("ap-east-9", "amazonaws.com"),
    ],
)
def test_a_region_botocore_does_not_list_yet_matches_its_partition_by_pattern(
    region: str, suffix: str
) -> None:
    assert partition_dns_suffix(region) == suffix


@pytest.mark.parametrize("region", ["mars-central-1", "us-east-1.attacker.example", "local", ""])
def test_a_region_in_no_partition_is_a_coded_error_not_a_guessed_host(region: str) -> None:
    with pytest.raises(SageMakerError) as caught:
        bidi_endpoint_uri(region)
    assert caught.value.code == "unknown_region"
    assert "endpoint_uri" in caught.value.message


def standin_session(region: str, router: SageMakerBidiRouter) -> SageMakerBidiSession:
    botocore_session = botocore.session.Session()
    botocore_session.set_credentials("AKIDSTANDIN", "standin-secret")
    return SageMakerBidiSession(
        "kokoro-standin", region=region, botocore_session=botocore_session, transport=router
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(("partition", "region", "suffix"), PARTITIONS)
async def test_a_session_in_each_partition_reaches_its_host_through_the_real_sdk(
    model_server: RunningServer, partition: str, region: str, suffix: str
) -> None:
    """The SDK's request goes to the partition's host on 8443, signed for the region (the stand-in checks)."""
    async with (
        SageMakerBidiRouter(model_server.ws_url, region=region, dns_suffix=suffix) as router,
        standin_session(region, router) as session,
    ):
        await session.send(SynthesizeRequest("Hi.", request_id="r1"))
        async for event in session.events():
            if isinstance(event, SynthesisCompleted):
                break
    assert router.log.endpoint_names == ["kokoro-standin"]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_session_reads_partitions_through_its_botocore_session(
    model_server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``AWS_DATA_PATH`` partition data (a private partition, say) is honoured, as boto3 honours it."""
    partitions = {
        "partitions": [
            {
                "id": "aws-test",
                "outputs": {"dnsSuffix": "example.test", "name": "aws-test"},
                "regionRegex": "^test\\-\\w+\\-\\d+$",
                "regions": {"test-north-1": {}},
            }
        ],
        "version": "1.1",
    }
    (tmp_path / "partitions.json").write_text(json.dumps(partitions))
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    async with (
        SageMakerBidiRouter(model_server.ws_url, region="test-north-1", dns_suffix="example.test") as router,
        standin_session("test-north-1", router),
    ):
        pass
    assert router.log.endpoint_names == ["kokoro-standin"]
