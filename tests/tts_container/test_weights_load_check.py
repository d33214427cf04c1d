"""A start re-hashes the cache it loads : sizes alone would let a same-size swap through.

The cache here stands for the folders a container loads from without having filled them itself: a baked
image layer, or ``/opt/ml/model`` that SageMaker downloaded from the weights bucket (manifest included).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.tts_container.weight_source_doubles import ScriptedSource
from tts_container.weights import provisioning
from tts_container.weights.cache import (
    CONFIG_FILE,
    MANIFEST_FILE,
    ONNX_FILE,
    PART_FILES,
    VOICES_FILE,
    SourceUnavailable,
    WeightsUnavailable,
    ensure_weights,
    read_manifest,
    verify_cache,
)


def flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 1  # same size, different content
    path.write_bytes(bytes(data))


def rewrite_manifest_to_match(root: Path, name: str) -> None:
    """What someone who can write the folder does after swapping a file: make its entry agree."""
    table = read_manifest(root)
    data = (root / name).read_bytes()
    table[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "source": "bucket"}
    (root / MANIFEST_FILE).write_text(json.dumps({"version": 1, "files": table}), encoding="utf-8")


def test_a_same_size_swap_in_the_cache_is_noticed_and_fetched_again(tmp_path: Path) -> None:
    ensure_weights(tmp_path, sources=[ScriptedSource("filler")])
    flip_one_byte(tmp_path / ONNX_FILE)
    again = ScriptedSource("again")
    weights = ensure_weights(tmp_path, sources=[again])
    assert again.calls == [frozenset({ONNX_FILE})]
    assert weights.onnx_model.read_bytes() == b"weights:" + ONNX_FILE.encode()
    assert verify_cache(tmp_path) == []


def test_a_bad_cache_file_is_reported_when_no_source_can_replace_it(tmp_path: Path) -> None:
    ensure_weights(tmp_path, sources=[ScriptedSource("filler")])
    flip_one_byte(tmp_path / CONFIG_FILE)
    with pytest.raises(WeightsUnavailable) as caught:
        ensure_weights(tmp_path, sources=[ScriptedSource("offline", error=SourceUnavailable("offline"))])
    finding = (f"cache {tmp_path}", f"{CONFIG_FILE}: sha256 differs from the manifest")
    assert caught.value.failures[0] == finding
    assert caught.value.failures[1] == ("offline", "SourceUnavailable: offline")


def test_the_production_path_rehashes_too(tmp_path: Path) -> None:
    """``provisioning.ensure_weights`` is what the engines' ``from_cache`` and the local stack call."""
    provisioning.ensure_weights(tmp_path, sources=[ScriptedSource("filler")])
    flip_one_byte(tmp_path / VOICES_FILE)
    again = ScriptedSource("again")
    provisioning.ensure_weights(tmp_path, sources=[again])
    assert again.calls == [frozenset({VOICES_FILE})]


def test_required_pins_refuse_a_model_dir_whose_manifest_was_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``STRANDS_KOKORO_REQUIRE_PINNED=1`` a manifest beside the files cannot vouch for a pinned one."""
    good = ScriptedSource("pinned source")
    pins = {CONFIG_FILE: frozenset({hashlib.sha256(b"weights:" + CONFIG_FILE.encode()).hexdigest()})}
    monkeypatch.setattr(provisioning, "PINNED_SHA256", pins)
    model_dir = tmp_path / "opt-ml-model"
    ensure_weights(model_dir, sources=[good])
    (model_dir / CONFIG_FILE).write_bytes(b'{"swapped": true}')
    rewrite_manifest_to_match(model_dir, CONFIG_FILE)

    monkeypatch.delenv(provisioning.REQUIRE_PINNED_ENV, raising=False)
    untouched = ScriptedSource("not needed")
    provisioning.ensure_weights(model_dir, sources=[untouched])
    assert untouched.calls == []  # consistent with its manifest: without required pins, accepted

    monkeypatch.setenv(provisioning.REQUIRE_PINNED_ENV, "1")
    swapper = ScriptedSource("swapper", payload=b"other:")
    weights = provisioning.ensure_weights(model_dir, sources=[swapper, good])
    assert swapper.calls == good.calls[1:] == [frozenset({CONFIG_FILE})]
    assert weights.config.read_bytes() == b"weights:" + CONFIG_FILE.encode()  # the swapper was refused
    assert read_manifest(model_dir)[CONFIG_FILE]["source"] == "pinned source"


def test_required_pins_refuse_an_unpinned_install_from_any_source(tmp_path: Path) -> None:
    pins = {ONNX_FILE: frozenset({"0" * 64})}
    refused = r"IntegrityError: kokoro-v1\.0\.int8\.onnx: sha256 .* pinned"
    with pytest.raises(WeightsUnavailable, match=refused):
        ensure_weights(tmp_path, sources=[ScriptedSource("anything")], pins=pins)
    assert not (tmp_path / ONNX_FILE).exists()


def test_verify_reports_files_that_are_not_pinned(tmp_path: Path) -> None:
    ensure_weights(tmp_path, sources=[ScriptedSource("filler")])
    assert verify_cache(tmp_path) == []
    pins = {CONFIG_FILE: frozenset({"0" * 64})}
    problems = verify_cache(tmp_path, pins=pins)
    assert len(problems) == 1 and problems[0].startswith(f"{CONFIG_FILE}: sha256 ")
    assert problems[0].endswith("is not a pinned one")


def test_cli_verify_checks_the_real_pins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tts_container.weights import cli as weights_cli

    ensure_weights(tmp_path, sources=[ScriptedSource("filler")])
    assert weights_cli.main(["verify", "--cache-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{CONFIG_FILE}: sha256" in err and f"{ONNX_FILE}: sha256" in err
    assert VOICES_FILE not in err  # unpinned: vouched for by the cache's own manifest
    assert PART_FILES["onnx"] == {CONFIG_FILE, ONNX_FILE, VOICES_FILE}
