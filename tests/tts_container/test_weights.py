"""Weight provisioning: source order, sha256 checks, the all-sources-failed report, idempotency, the CLI.

Unit tests use ``ScriptedSource`` (a test double writing chosen bytes); the registry-package source and
the directory source are also exercised for real, once, on the actual Kokoro files. Pins, load-time
hashing, the cache lock and the import graph have their own ``test_weights_*.py`` files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.tts_container.weight_source_doubles import ScriptedSource
from tts_container.weights import cli as weights_cli
from tts_container.weights.cache import (
    CONFIG_FILE,
    MANIFEST_FILE,
    ONNX_FILE,
    PART_FILES,
    TORCH_FILE,
    VOICES_FILE,
    CachedWeights,
    IntegrityError,
    SourceUnavailable,
    WeightsUnavailable,
    default_cache_dir,
    ensure_weights,
    read_manifest,
    sha256_of,
    verify_cache,
)
from tts_container.weights.lock import LOCK_FILE
from tts_container.weights.sources import (
    CONFIG_SHA256,
    KOKORO_V1_VOICES,
    ONNX_INT8_SHA256,
    DirectorySource,
    HubSource,
    RegistryPackagesSource,
    S3Source,
    default_sources,
)


def test_sources_are_tried_in_order_until_one_works(tmp_path: Path) -> None:
    first = ScriptedSource("first", SourceUnavailable("not configured"))
    second = ScriptedSource("second")
    third = ScriptedSource("third")
    weights = ensure_weights(tmp_path, sources=[first, second, third])
    assert isinstance(weights, CachedWeights)
    assert first.calls == [PART_FILES["onnx"]] and second.calls == [PART_FILES["onnx"]] and third.calls == []
    manifest = read_manifest(tmp_path)
    assert {entry["source"] for entry in manifest.values()} == {"second"}
    assert weights.config.read_bytes() == b"weights:" + CONFIG_FILE.encode()
    assert manifest[CONFIG_FILE]["sha256"] == sha256_of(weights.config)


def test_every_failure_is_listed_with_its_reason(tmp_path: Path) -> None:
    sources = [
        ScriptedSource("alpha", SourceUnavailable("alpha is offline")),
        ScriptedSource("beta", IntegrityError("beta sha256 mismatch")),
        ScriptedSource("gamma", RuntimeError("gamma exploded")),
    ]
    with pytest.raises(WeightsUnavailable) as caught:
        ensure_weights(tmp_path, sources=sources)
    message = str(caught.value)
    for text in ("alpha: SourceUnavailable: alpha is offline", "beta: IntegrityError: beta sha256 mismatch"):
        assert text in message
    assert [label for label, _ in caught.value.failures] == ["alpha", "beta", "gamma"]
    assert not (tmp_path / MANIFEST_FILE).exists()
    # no staging leftovers, nothing half-installed; only the (empty) writer lock file stays
    assert [p.name for p in tmp_path.iterdir()] == [LOCK_FILE]


def test_default_sources_report_unconfigured_directory_and_s3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STRANDS_KOKORO_WEIGHTS_DIR", raising=False)
    monkeypatch.delenv("STRANDS_KOKORO_S3_URI", raising=False)
    directory, s3, hub, registry = default_sources()
    assert isinstance(hub, HubSource) and isinstance(registry, RegistryPackagesSource)
    # the torch checkpoint is on no registry: every source fails, each for its own reason
    with pytest.raises(WeightsUnavailable) as caught:
        ensure_weights(tmp_path, part="torch", sources=[directory, s3, registry])
    reasons = dict(caught.value.failures)
    assert "no directory given" in reasons[directory.label]
    assert "no s3:// URI given" in reasons[s3.label]
    assert f"no registry package carries {TORCH_FILE}" in reasons[registry.label]


def test_s3_source_refuses_a_non_s3_uri(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match="is not an s3:// URI"):
        S3Source("https://example.invalid/kokoro").fetch(frozenset({CONFIG_FILE}), tmp_path)


def test_hub_source_offline_fails_without_waiting_for_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    with pytest.raises(Exception, match=r"(?i)offline|cannot find|local"):
        HubSource().fetch(frozenset({CONFIG_FILE}), tmp_path)


def test_hub_source_uses_the_local_hub_cache_at_the_pinned_revision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine that downloaded the hub files once (e.g. a CI cache) needs no network to fill ours."""
    from huggingface_hub import constants

    from tts_container.weights.sources import CONFIG_DISTRIBUTION, HUB_MODEL_REVISION, _installed_file

    snapshot = tmp_path / "hub-cache" / "models--hexgrad--Kokoro-82M" / "snapshots" / HUB_MODEL_REVISION
    snapshot.mkdir(parents=True)
    real_config = _installed_file(CONFIG_DISTRIBUTION, "kokoro_onnx/config.json")
    (snapshot / CONFIG_FILE).write_bytes(real_config.read_bytes())
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    staging = tmp_path / "staging"
    staging.mkdir()
    HubSource().fetch(frozenset({CONFIG_FILE}), staging)
    assert sha256_of(staging / CONFIG_FILE) == CONFIG_SHA256

    (snapshot / CONFIG_FILE).write_text("{}")
    with pytest.raises(IntegrityError, match=r"hexgrad/Kokoro-82M/config\.json"):
        HubSource().fetch(frozenset({CONFIG_FILE}), staging)


def test_filled_cache_is_not_fetched_again(tmp_path: Path) -> None:
    ensure_weights(tmp_path, sources=[ScriptedSource("filler")])
    mtimes = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    refuse = ScriptedSource("must-not-be-called", RuntimeError("called"))
    ensure_weights(tmp_path, sources=[refuse])
    assert refuse.calls == []
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == mtimes


def test_only_missing_or_resized_files_are_fetched(tmp_path: Path) -> None:
    ensure_weights(tmp_path, sources=[ScriptedSource("filler")])
    (tmp_path / VOICES_FILE).write_bytes(b"truncated")
    again = ScriptedSource("again")
    ensure_weights(tmp_path, sources=[again])
    assert again.calls == [frozenset({VOICES_FILE})]
    torch_source = ScriptedSource("torch")
    ensure_weights(tmp_path, part="torch", sources=[torch_source])
    assert torch_source.calls == [frozenset({TORCH_FILE})]
    assert set(read_manifest(tmp_path)) == PART_FILES["onnx"] | PART_FILES["torch"]


def test_directory_source_refuses_a_file_whose_sha256_is_not_pinned(tmp_path: Path) -> None:
    source_dir = tmp_path / "source"
    source_dir.mkdir()
    (source_dir / CONFIG_FILE).write_text("{}")
    with pytest.raises(IntegrityError, match=f"does not match the pinned {CONFIG_SHA256}"):
        DirectorySource(source_dir).fetch(frozenset({CONFIG_FILE}), tmp_path)
    (source_dir / VOICES_FILE).write_bytes(b"voices")
    with pytest.raises(IntegrityError, match=r"no manifest\.json entry and no pinned sha256"):
        DirectorySource(source_dir).fetch(frozenset({VOICES_FILE}), tmp_path)


def test_sha_mismatch_in_a_source_manifest_is_reported_and_nothing_installed(tmp_path: Path) -> None:
    """Without pins (``pins={}``) the source's manifest vouches for its files, and a mismatch is refused."""
    source_dir = tmp_path / "source"
    ensure_weights(source_dir, sources=[ScriptedSource("filler")])
    (source_dir / ONNX_FILE).write_bytes(b"tampered")
    cache = tmp_path / "cache"
    with pytest.raises(WeightsUnavailable, match=r"IntegrityError: .*kokoro-v1\.0\.int8\.onnx.*: sha256"):
        ensure_weights(cache, sources=[DirectorySource(source_dir, pins={})])
    assert not (cache / ONNX_FILE).exists()


@pytest.mark.slow
def test_registry_packages_fill_a_real_cache_and_a_copy_of_it_is_a_valid_source(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    weights = ensure_weights(cache, sources=[RegistryPackagesSource()])
    manifest = read_manifest(cache)
    assert manifest[ONNX_FILE]["sha256"] == ONNX_INT8_SHA256
    assert manifest[ONNX_FILE]["size"] == 92_361_271
    assert manifest[CONFIG_FILE]["sha256"] == CONFIG_SHA256
    with np.load(weights.voices) as voices:
        assert sorted(voices.files) == sorted(KOKORO_V1_VOICES)
        assert voices["af_heart"].shape == (510, 1, 256) and voices["af_heart"].dtype == np.float32
    assert verify_cache(cache) == []

    copy = ensure_weights(tmp_path / "copy", sources=[DirectorySource(cache)])
    assert read_manifest(copy.root)[VOICES_FILE]["sha256"] == manifest[VOICES_FILE]["sha256"]

    config = cache / CONFIG_FILE
    data = bytearray(config.read_bytes())
    data[10] ^= 1  # same size, different content: only a re-hash notices
    config.write_bytes(bytes(data))
    assert verify_cache(cache) == [f"{CONFIG_FILE}: sha256 differs from the manifest"]


def test_cli_fetch_verify_and_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code = weights_cli.main(
        ["fetch", "--cache-dir", str(tmp_path / "c"), "--source", "dir", "--source-dir", str(empty)]
    )
    assert code == 1
    assert f"directory {empty}: SourceUnavailable" in capsys.readouterr().err

    assert weights_cli.main(["verify", "--cache-dir", str(tmp_path / "c")]) == 1
    assert weights_cli.main(["path", "--cache-dir", str(tmp_path / "c")]) == 0
    assert capsys.readouterr().out.strip().endswith(str(tmp_path / "c"))


def test_cache_dir_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("STRANDS_KOKORO_CACHE", raising=False)
    assert default_cache_dir() == home / ".cache" / "strands-kokoro"  # the default, without the setting
    monkeypatch.setenv("STRANDS_KOKORO_CACHE", str(tmp_path / "env-cache"))
    weights = ensure_weights(sources=[ScriptedSource("filler")])
    assert weights.root == tmp_path / "env-cache"
    assert json.loads((weights.root / MANIFEST_FILE).read_text())["version"] == 1
    assert not home.exists()  # the setting replaced the default cache; nothing was written there


class ScriptedS3Client:
    """Test double for boto3's S3 client: serves objects from a local folder keyed ``bucket/key``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.downloaded: list[str] = []

    def head_object(self, Bucket: str, Key: str) -> dict[str, int]:
        return {"ContentLength": (self.root / Bucket / Key).stat().st_size}

    def download_file(self, bucket: str, key: str, filename: str, Callback: object = None) -> None:
        self.downloaded.append(key)
        Path(filename).write_bytes((self.root / bucket / key).read_bytes())


def test_s3_source_checks_files_against_the_bucket_manifest_with_fake_s3_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3

    ensure_weights(tmp_path / "bucket" / "models" / "kokoro", sources=[ScriptedSource("uploaded")])
    client = ScriptedS3Client(tmp_path)
    monkeypatch.setattr(boto3, "client", lambda service: client)
    # pins={}: the scripted bytes are pinned nowhere, so the bucket's manifest vouches for them here
    weights = ensure_weights(tmp_path / "cache", sources=[S3Source("s3://bucket/models/kokoro/", pins={})])
    assert read_manifest(weights.root)[CONFIG_FILE]["source"] == "s3://bucket/models/kokoro"
    assert client.downloaded[0] == "models/kokoro/manifest.json"

    (tmp_path / "bucket" / "models" / "kokoro" / ONNX_FILE).write_bytes(b"swapped")
    with pytest.raises(WeightsUnavailable, match=r"s3://bucket/models/kokoro: IntegrityError"):
        ensure_weights(tmp_path / "cache2", sources=[S3Source("s3://bucket/models/kokoro", pins={})])
