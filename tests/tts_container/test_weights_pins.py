"""Pinned sha256s win over a source's own ``manifest.json`` (weight integrity).

A directory or bucket carries its manifest beside the files it describes, so whoever can replace a file
can rewrite its entry too. These tests build such a source on disk (real files in tmp dirs; S3 through a
scripted boto3 client serving the same folder) and check that a pinned file is judged by its pin alone,
while a file with no pin may still be vouched for by the source's manifest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tts_container.weights.cache import (
    CONFIG_FILE,
    MANIFEST_FILE,
    ONNX_FILE,
    TORCH_FILE,
    VOICES_FILE,
    IntegrityError,
    WeightsUnavailable,
    check_sha256,
    ensure_weights,
    read_manifest,
)
from tts_container.weights.sources import (
    CONFIG_DISTRIBUTION,
    CONFIG_SHA256,
    HUB_ONNX_INT8_SHA256,
    HUB_ONNX_REVISION,
    ONNX_INT8_SHA256,
    PINNED_SHA256,
    DirectorySource,
    HubSource,
    S3Source,
    _installed_file,
)


def write_source(root: Path, files: dict[str, bytes]) -> None:
    """A source folder whose ``manifest.json`` vouches for exactly the bytes written (an attacker's copy)."""
    root.mkdir(parents=True, exist_ok=True)
    table = {}
    for name, data in files.items():
        (root / name).write_bytes(data)
        table[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "source": "bucket"}
    (root / MANIFEST_FILE).write_text(json.dumps({"version": 1, "files": table}), encoding="utf-8")


def real_config() -> bytes:
    return _installed_file(CONFIG_DISTRIBUTION, "kokoro_onnx/config.json").read_bytes()


def test_every_downloadable_file_has_a_pin_and_the_onnx_file_two() -> None:
    assert PINNED_SHA256[CONFIG_FILE] == {CONFIG_SHA256}
    assert PINNED_SHA256[ONNX_FILE] == {ONNX_INT8_SHA256, HUB_ONNX_INT8_SHA256}
    assert TORCH_FILE in PINNED_SHA256
    assert VOICES_FILE not in PINNED_SHA256  # built from the voice tables, so no single file to pin


def test_a_directory_manifest_cannot_vouch_for_a_swapped_pinned_file(tmp_path: Path) -> None:
    source = tmp_path / "model-dir"
    write_source(source, {CONFIG_FILE: b'{"swapped": true}'})  # its manifest entry matches the swap
    staging = tmp_path / "staging"
    staging.mkdir()
    with pytest.raises(IntegrityError, match=f"does not match the pinned {CONFIG_SHA256}"):
        DirectorySource(source).fetch(frozenset({CONFIG_FILE}), staging)


def test_a_directory_manifest_with_a_wrong_hash_for_a_pinned_file_does_not_block_the_real_one(
    tmp_path: Path,
) -> None:
    source = tmp_path / "model-dir"
    write_source(source, {CONFIG_FILE: real_config()})
    table = read_manifest(source)
    table[CONFIG_FILE]["sha256"] = "0" * 64  # a stale or hostile entry: the pin decides, not the entry
    (source / MANIFEST_FILE).write_text(json.dumps({"version": 1, "files": table}), encoding="utf-8")
    staging = tmp_path / "staging"
    staging.mkdir()
    DirectorySource(source).fetch(frozenset({CONFIG_FILE}), staging)
    assert hashlib.sha256((staging / CONFIG_FILE).read_bytes()).hexdigest() == CONFIG_SHA256


def test_a_source_manifest_still_vouches_for_a_file_with_no_pin(tmp_path: Path) -> None:
    source = tmp_path / "model-dir"
    write_source(source, {CONFIG_FILE: real_config(), VOICES_FILE: b"voice tables"})
    staging = tmp_path / "staging"
    staging.mkdir()
    DirectorySource(source).fetch(frozenset({CONFIG_FILE, VOICES_FILE}), staging)
    assert (staging / VOICES_FILE).read_bytes() == b"voice tables"

    (source / VOICES_FILE).write_bytes(b"other tables")  # now differs from the source's own manifest
    with pytest.raises(IntegrityError, match=r"voices\.npz \(sha256 from the source's manifest\.json\)"):
        DirectorySource(source).fetch(frozenset({VOICES_FILE}), staging)


class FolderS3Client:
    """Test double for boto3's S3 client: serves ``bucket/key`` objects from a local folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def head_object(self, Bucket: str, Key: str) -> dict[str, int]:
        return {"ContentLength": (self.root / Bucket / Key).stat().st_size}

    def download_file(self, bucket: str, key: str, filename: str, Callback: object = None) -> None:
        Path(filename).write_bytes((self.root / bucket / key).read_bytes())


def test_write_access_to_the_bucket_is_not_enough_to_swap_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3

    write_source(
        tmp_path / "bucket" / "kokoro",
        {CONFIG_FILE: b'{"swapped": true}', ONNX_FILE: b"not the model", VOICES_FILE: b"voices"},
    )
    monkeypatch.setattr(boto3, "client", lambda service: FolderS3Client(tmp_path))
    cache = tmp_path / "cache"
    with pytest.raises(WeightsUnavailable, match=r"s3://bucket/kokoro: IntegrityError: .*does not match"):
        ensure_weights(cache, sources=[S3Source("s3://bucket/kokoro")])
    assert read_manifest(cache) == {}
    assert not (cache / CONFIG_FILE).exists()


def test_the_hub_onnx_export_is_checked_against_its_pin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hub's int8 export used to be trusted on its revision alone; now its LFS sha256 is pinned."""
    from huggingface_hub import constants

    from tts_container.weights.sources import HUB_ONNX_REPO

    repo_dir = "models--" + HUB_ONNX_REPO.replace("/", "--")
    snapshot = tmp_path / "hub-cache" / repo_dir / "snapshots" / HUB_ONNX_REVISION / "onnx"
    snapshot.mkdir(parents=True)
    (snapshot / "model_quantized.onnx").write_bytes(b"not the hub export")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    staging = tmp_path / "staging"
    staging.mkdir()
    refused = f"model_quantized.onnx: sha256 .* pinned {HUB_ONNX_INT8_SHA256}"
    with pytest.raises(IntegrityError, match=refused):
        HubSource().fetch(frozenset({ONNX_FILE}), staging)


def test_check_sha256_accepts_any_of_several_pins(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"abc")
    digest = hashlib.sha256(b"abc").hexdigest()
    assert check_sha256(path, frozenset({"0" * 64, digest}), "file") == digest
    with pytest.raises(IntegrityError, match="does not match the pinned one of"):
        check_sha256(path, frozenset({"0" * 64, "1" * 64}), "file")
