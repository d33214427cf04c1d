"""The AdaSnake operator: built here from its C source, the same arithmetic as the seven graph nodes it
replaces, refusing tensors of the wrong shape, and fused into the static vocoder without moving its sound.

The library is the real one, built (or found) in the default weight cache, as a server's first start does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from benchmarks.log_mel import log_mel_distance
from benchmarks.torch_converted import HELD_OUT
from tests.tts_container.real_onnx_engine import shared_onnx_engine
from tts_container.engines import onnx_engine
from tts_container.engines.ada_snake import (
    DOMAIN,
    NATIVE_DIR,
    OP_TYPE,
    OperatorUnavailable,
    fuse_snakes,
    operator_library,
)
from tts_container.engines.onnx_engine import (
    DYNAMIC,
    FUSED,
    STATIC,
    VARIANT_ENV,
    OnnxEngine,
)
from tts_container.engines.static_int8 import STATIC_DIR, static_vocoder
from tts_container.engines.windows import HARMONICS
from tts_container.synthesis.utterance import plan_utterance
from tts_container.weights.provisioning import ensure_weights

CHANNELS = 4
# Measured 0.60-0.67 dB between the fused and the unfused static vocoder: an 8-bit activation rounded
# the other way here and there, against ~0.85 dB from each to the float vocoder.
MAX_MEL_DISTANCE_DB = 1.0
MAX_LEVEL_DB = 0.5


@pytest.fixture(scope="module")
def library() -> Path:
    return operator_library(ensure_weights(None, part="onnx").root / NATIVE_DIR)


def _session(nodes: list[onnx.NodeProto], library: Path, steps: int | None = None) -> ort.InferenceSession:
    names = ("x", "mean", "deviation", "gain", "bias", "alpha")
    inputs = [
        helper.make_tensor_value_info(
            name, TensorProto.FLOAT, None if name != "x" else [None, CHANNELS, steps]
        )
        for name in names
    ]
    graph = helper.make_graph(
        nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]
    options = ort.SessionOptions()
    options.register_custom_ops_library(str(library))
    return ort.InferenceSession(helper.make_model(graph, opset_imports=opsets).SerializeToString(), options)


def _graph_nodes() -> list[onnx.NodeProto]:
    """The chain as the export has it."""
    two = helper.make_node(
        "Constant", [], ["two"], value=helper.make_tensor("v", TensorProto.FLOAT, [], [2.0])
    )
    return [
        two,
        helper.make_node("Sub", ["x", "mean"], ["centred"]),
        helper.make_node("Div", ["centred", "deviation"], ["normalized"]),
        helper.make_node("Mul", ["gain", "normalized"], ["scaled"]),
        helper.make_node("Add", ["scaled", "bias"], ["h"]),
        helper.make_node("Mul", ["alpha", "h"], ["u"]),
        helper.make_node("Sin", ["u"], ["sine"]),
        helper.make_node("Pow", ["sine", "two"], ["square"]),
        helper.make_node("Reciprocal", ["alpha"], ["inverse"]),
        helper.make_node("Mul", ["inverse", "square"], ["weighed"]),
        helper.make_node("Add", ["h", "weighed"], ["y"]),
    ]


def _fused_node() -> onnx.NodeProto:
    return helper.make_node(
        OP_TYPE, ["x", "mean", "deviation", "gain", "bias", "alpha"], ["y"], domain=DOMAIN
    )


def _feeds(batch: int, parameter_rows: int, steps: int = 3_000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(batch * 10 + parameter_rows)

    def per_channel(low: float, high: float) -> np.ndarray:
        return rng.uniform(low, high, (parameter_rows, CHANNELS, 1)).astype(np.float32)

    return {
        "x": (rng.standard_normal((batch, CHANNELS, steps)) * 6).astype(np.float32),
        "mean": per_channel(-1, 1),
        "deviation": per_channel(0.2, 3),
        "gain": per_channel(0.3, 2),
        "bias": per_channel(-1, 1),
        "alpha": np.abs(per_channel(0.1, 12)[:1]),  # one alpha per channel, as the export has it
    }


@pytest.mark.parametrize(("batch", "parameter_rows"), [(1, 1), (2, 1), (2, 2)])
def test_the_operator_computes_what_the_seven_nodes_compute(
    library: Path, batch: int, parameter_rows: int
) -> None:
    feeds = _feeds(batch, parameter_rows)
    expected = _session(_graph_nodes(), library).run(None, feeds)[0]
    fused = _session([_fused_node()], library).run(None, feeds)[0]
    assert fused.shape == expected.shape
    # Arguments of the sine reach ~100 here; float's own sine differs by a few units in the last place.
    np.testing.assert_allclose(fused, expected, rtol=2e-5, atol=2e-5)


def test_an_empty_window_gives_an_empty_output(library: Path) -> None:
    (fused,) = _session([_fused_node()], library).run(None, _feeds(1, 1, steps=0))
    assert fused.shape == (1, CHANNELS, 0)


def test_a_per_channel_input_of_the_wrong_shape_is_refused_with_the_operator_named(library: Path) -> None:
    feeds = _feeds(1, 1)
    feeds["gain"] = np.ones((1, CHANNELS + 1, 1), dtype=np.float32)
    with pytest.raises(Exception, match=r"AdaSnake: x is \(N, C, T\)"):
        _session([_fused_node()], library).run(None, feeds)


def test_without_a_compiler_the_operator_is_unavailable_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(OperatorUnavailable, match="C compiler"):
        operator_library(tmp_path)


def test_without_headers_or_uv_to_fetch_them_the_operator_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CC", raising=False)
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "onnxruntime_c_api.h").write_text("/* not the pinned header */\n")
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/cc" if name == "cc" else None)
    with pytest.raises(OperatorUnavailable, match="no uv"):
        operator_library(tmp_path)


@pytest.mark.slow
def test_every_snake_of_the_static_vocoder_is_fused_and_it_sounds_the_same() -> None:
    engine = shared_onnx_engine()
    assert set(engine.variants) == {DYNAMIC, FUSED}  # the operator builds on this machine
    weights = ensure_weights(None, part="onnx")
    static = static_vocoder(
        engine._graphs.vocoder, weights.derived_dir(STATIC_DIR, weights.onnx_model), lambda: []
    )
    fused, count = fuse_snakes(static)
    assert count == 48  # 6 resblocks and 2 noise blocks, 6 snakes each
    left = [node.name for node in onnx.load_from_string(fused).graph.node if node.op_type == "Sin"]
    assert not [name for name in left if "res" in name], left  # only the sine source and the iSTFT keep one
    unfused = OnnxEngine.from_cache(threads=2)  # a second engine: the shared one holds the fused variant
    unfused.add_static_variant(weights.derived_dir(STATIC_DIR, weights.onnx_model))
    unfused.variant = STATIC
    chosen, engine.variant = engine.variant, FUSED
    zero = np.zeros(HARMONICS, dtype=np.float32)
    try:
        for voice, text in HELD_OUT[:4]:
            (segment,) = plan_utterance(engine._phonemizer, text, voice=voice, lang="en-us")
            prosody = engine.prosody(segment.phonemes.text, voice=voice, speed=1.0)
            audio, _ = engine.vocode(prosody, 0, prosody.steps, phase=zero, stats=None)
            reference, _ = unfused.vocode(prosody, 0, prosody.steps, phase=zero, stats=None)
            distance = log_mel_distance(audio, reference)
            assert distance.distance_db <= MAX_MEL_DISTANCE_DB, (text, distance)
            assert abs(distance.level_db) <= MAX_LEVEL_DB, (text, distance)
    finally:
        engine.variant = chosen


@pytest.mark.slow
def test_an_engine_renders_unfused_where_the_operator_is_unavailable_unless_it_was_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unavailable(folder: Path) -> Path:
        raise OperatorUnavailable("no C compiler (a test double)")

    monkeypatch.setattr(onnx_engine, "operator_library", unavailable)
    weights = ensure_weights(None, part="onnx")
    static_dir = weights.derived_dir(STATIC_DIR, weights.onnx_model)
    monkeypatch.setenv(VARIANT_ENV, DYNAMIC)
    engine = OnnxEngine.from_cache(threads=2)
    monkeypatch.delenv(VARIANT_ENV)
    engine.add_static_variant(static_dir, weights.root / NATIVE_DIR)
    assert set(engine.variants) == {DYNAMIC, STATIC}
    monkeypatch.setenv(VARIANT_ENV, FUSED)
    with pytest.raises(OperatorUnavailable, match="test double"):
        engine.add_static_variant(static_dir, weights.root / NATIVE_DIR)
