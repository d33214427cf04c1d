"""The torch part's fallback: a checkpoint derived from the onnx part when no source has the real one.

The provisioning around the conversion, with a test double in place of the converter (the real one, on
the real export, is ``test_weights_conversion.py``): the real checkpoint stays the first choice, the onnx
part is provisioned before deriving, the result is recorded as derived from the export's sha256, a
replaced export makes it stale, and a failure lists what both steps tried.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tts_container.weight_source_doubles import ScriptedSource
from tts_container.weights import cli as weights_cli
from tts_container.weights import conversion as weights_conversion
from tts_container.weights import provisioning
from tts_container.weights.cache import (
    CONFIG_FILE,
    DERIVED_FROM,
    ONNX_FILE,
    PART_FILES,
    TORCH_FILE,
    SourceUnavailable,
    WeightsUnavailable,
    cache_problems,
    read_manifest,
    sha256_of,
    verify_cache,
)
from tts_container.weights.sources import OnnxDerivedSource


class OnnxPartOnlySource(ScriptedSource):
    """Like the registry packages: the onnx part's files, never the torch checkpoint."""

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        if TORCH_FILE in names:
            self.calls.append(names)
            raise SourceUnavailable(f"carries no {TORCH_FILE}")
        super().fetch(names, staging)


class ConverterDouble:
    """Stands in for :func:`tts_container.weights.conversion.derive_checkpoint`: records its calls and
    writes a checkpoint made from the export's bytes (or raises a scripted error)."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls: list[tuple[Path, Path, str]] = []

    def __call__(self, onnx_path: Path, config_path: Path, target: Path) -> None:
        self.calls.append((onnx_path, config_path, target.name))
        if self.error is not None:
            raise self.error
        target.write_bytes(b"checkpoint of " + onnx_path.read_bytes())


@pytest.fixture
def converter(monkeypatch: pytest.MonkeyPatch) -> ConverterDouble:
    double = ConverterDouble()
    monkeypatch.setattr(weights_conversion, "derive_checkpoint", double)
    return double


def test_no_source_has_the_checkpoint_so_it_is_derived_from_the_onnx_part(
    tmp_path: Path, converter: ConverterDouble
) -> None:
    source = OnnxPartOnlySource("registry")
    weights = provisioning.ensure_weights(tmp_path, part="torch", sources=[source])

    assert source.calls == [PART_FILES["torch"], PART_FILES["onnx"]]  # the real checkpoint was asked first
    assert converter.calls == [(tmp_path / ONNX_FILE, tmp_path / CONFIG_FILE, TORCH_FILE)]
    assert weights.torch_model.read_bytes() == b"checkpoint of weights:" + ONNX_FILE.encode()
    onnx_sha256 = sha256_of(weights.onnx_model)
    entry = read_manifest(tmp_path)[TORCH_FILE]
    assert entry["source"] == f"derived from {ONNX_FILE} {onnx_sha256[:16]}"
    assert entry[DERIVED_FROM] == {ONNX_FILE: onnx_sha256}
    assert entry["sha256"] == sha256_of(weights.torch_model)

    provisioning.ensure_weights(tmp_path, part="torch", sources=[source])  # cached: nothing runs again
    assert len(converter.calls) == 1 and len(source.calls) == 2


def test_a_source_with_the_real_checkpoint_is_used_and_nothing_is_derived(
    tmp_path: Path, converter: ConverterDouble
) -> None:
    hub = ScriptedSource("hub")
    provisioning.ensure_weights(tmp_path, part="torch", sources=[hub])
    assert hub.calls == [PART_FILES["torch"]]  # not even the onnx part
    assert converter.calls == []
    assert read_manifest(tmp_path)[TORCH_FILE]["source"] == "hub"
    assert DERIVED_FROM not in read_manifest(tmp_path)[TORCH_FILE]


def test_a_replaced_export_makes_the_derived_checkpoint_stale_and_it_is_derived_again(
    tmp_path: Path, converter: ConverterDouble
) -> None:
    provisioning.ensure_weights(tmp_path, part="torch", sources=[OnnxPartOnlySource("registry")])
    (tmp_path / ONNX_FILE).write_bytes(b"a damaged export")
    provisioning.ensure_weights(tmp_path, part="onnx", sources=[OnnxPartOnlySource("other", payload=b"new:")])
    new_sha256 = sha256_of(tmp_path / ONNX_FILE)

    stale = {TORCH_FILE: f"derived from another {ONNX_FILE}"}
    assert cache_problems(tmp_path, PART_FILES["torch"]) == stale
    assert verify_cache(tmp_path) == [f"{TORCH_FILE}: derived from another {ONNX_FILE}"]

    weights = provisioning.ensure_weights(tmp_path, part="torch", sources=[OnnxPartOnlySource("registry")])
    assert len(converter.calls) == 2
    assert weights.torch_model.read_bytes() == b"checkpoint of new:" + ONNX_FILE.encode()
    assert read_manifest(tmp_path)[TORCH_FILE][DERIVED_FROM] == {ONNX_FILE: new_sha256}
    assert cache_problems(tmp_path, PART_FILES["torch"]) == {}


def test_an_export_gone_from_the_cache_leaves_the_derived_checkpoint_usable(
    tmp_path: Path, converter: ConverterDouble
) -> None:
    """Staleness means another export, not no export: the checkpoint is still what it was."""
    provisioning.ensure_weights(tmp_path, part="torch", sources=[OnnxPartOnlySource("registry")])
    (tmp_path / ONNX_FILE).unlink()
    assert cache_problems(tmp_path, PART_FILES["torch"]) == {}


def test_when_the_derivation_fails_too_every_source_of_both_steps_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(weights_conversion, "derive_checkpoint", ConverterDouble(RuntimeError("unmapped")))
    with pytest.raises(WeightsUnavailable) as caught:
        provisioning.ensure_weights(tmp_path, part="torch", sources=[OnnxPartOnlySource("registry")])
    labels = [label for label, _ in caught.value.failures]
    assert labels[0] == "registry" and labels[1].startswith(f"derived from {ONNX_FILE} ")
    assert caught.value.failures[1][1] == "RuntimeError: unmapped"
    assert not (tmp_path / TORCH_FILE).exists()


def test_without_derive_the_torch_part_comes_from_the_sources_alone(
    tmp_path: Path, converter: ConverterDouble
) -> None:
    source = OnnxPartOnlySource("registry")
    with pytest.raises(WeightsUnavailable, match=f"carries no {TORCH_FILE}"):
        provisioning.ensure_weights(tmp_path, part="torch", sources=[source], derive=False)
    assert source.calls == [PART_FILES["torch"]] and converter.calls == []
    assert not (tmp_path / ONNX_FILE).exists()


def test_the_derived_source_needs_the_export_in_the_cache_and_names_a_missing_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = OnnxDerivedSource(tmp_path)
    assert source.label == f"derived from {ONNX_FILE} (none cached)"
    with pytest.raises(SourceUnavailable, match=f"holds no {ONNX_FILE}"):
        source.fetch(frozenset({TORCH_FILE}), tmp_path)
    with pytest.raises(SourceUnavailable, match=f"derives {TORCH_FILE} alone, not {CONFIG_FILE}"):
        source.fetch(frozenset({TORCH_FILE, CONFIG_FILE}), tmp_path)

    provisioning.ensure_weights(tmp_path, part="onnx", sources=[OnnxPartOnlySource("registry")])
    missing = ModuleNotFoundError("No module named 'torch'", name="torch")
    monkeypatch.setattr(weights_conversion, "derive_checkpoint", ConverterDouble(missing))
    staging = tmp_path / "staging"
    staging.mkdir()
    with pytest.raises(
        SourceUnavailable, match=r"needs the torch and onnx extras \(torch is not installed\)"
    ):
        source.fetch(frozenset({TORCH_FILE}), staging)


def test_cli_fetch_of_the_torch_part_derives_it_and_says_so(
    tmp_path: Path,
    converter: ConverterDouble,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(weights_cli, "default_sources", lambda *_: [OnnxPartOnlySource("registry")])
    cache = tmp_path / "cache"
    assert weights_cli.main(["fetch", "--part", "torch", "--cache-dir", str(cache), "--no-derive"]) == 1
    assert f"carries no {TORCH_FILE}" in capsys.readouterr().err

    assert weights_cli.main(["fetch", "--part", "torch", "--cache-dir", str(cache)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"torch: {cache} ready in ")
    assert f"(from derived from {ONNX_FILE} " in said
    assert len(converter.calls) == 1
