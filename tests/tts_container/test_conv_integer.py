"""The export's integer convolutions as u8s8 matrix products: the same int32 numbers, bit for bit, on
synthetic convolutions of every shape the rewrite takes and on the real prosody half."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.tts_container.real_onnx_engine import shared_onnx_engine
from tts_container.engines.conv_integer import as_matmuls
from tts_container.engines.onnx_engine import session_options
from tts_container.synthesis.utterance import plan_utterance

CHANNELS, OUTPUTS = 6, 5


def _conv(taps: int, pads: tuple[int, int], dilation: int, stride: int = 1, group: int = 1) -> bytes:
    rng = np.random.default_rng(taps * 100 + dilation)
    weights = rng.integers(0, 256, (OUTPUTS, CHANNELS // group, taps), dtype=np.uint8)
    node = helper.make_node(
        "ConvInteger",
        ["x", "w", "x_zero", "w_zero"],
        ["y"],
        kernel_shape=[taps],
        pads=list(pads),
        dilations=[dilation],
        strides=[stride],
        group=group,
    )
    graph = helper.make_graph(
        [node],
        "conv",
        [
            helper.make_tensor_value_info("x", TensorProto.UINT8, [None, CHANNELS, None]),
            helper.make_tensor_value_info("x_zero", TensorProto.UINT8, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(np.array(71, np.uint8), "w_zero")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _run(model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model, session_options(1), providers=["CPUExecutionProvider"])
    return [np.asarray(output) for output in session.run(None, feeds)]


@pytest.mark.parametrize(
    ("taps", "pads", "dilation", "batch"),
    [(1, (0, 0), 1, 1), (3, (1, 1), 1, 1), (5, (2, 2), 1, 2), (3, (3, 3), 3, 1), (3, (0, 2), 1, 1)],
)
def test_a_convolution_gives_the_same_integers_as_a_matrix_product(
    taps: int, pads: tuple[int, int], dilation: int, batch: int
) -> None:
    model = _conv(taps, pads, dilation)
    rewritten, count = as_matmuls(model)
    assert count == 1
    assert "ConvInteger" not in {node.op_type for node in onnx.load_from_string(rewritten).graph.node}
    rng = np.random.default_rng(taps)
    feeds = {
        "x": rng.integers(0, 256, (batch, CHANNELS, 40), dtype=np.uint8),
        "x_zero": np.array(93, np.uint8),
    }
    (expected,), (got,) = _run(model, feeds), _run(rewritten, feeds)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("stride", "group"), [(2, 1), (1, 2)])
def test_strided_or_grouped_convolutions_are_left_as_they_are(stride: int, group: int) -> None:
    model = _conv(3, (1, 1), 1, stride=stride, group=group)
    assert as_matmuls(model) == (onnx.load_from_string(model).SerializeToString(), 0)


@pytest.mark.slow
def test_the_prosody_half_gives_the_same_durations_features_and_pitch() -> None:
    engine = shared_onnx_engine()
    original = engine._graphs.prosody
    rewritten, count = as_matmuls(original)
    assert count == 35  # all but F0_conv and N_conv, which stride 2
    for voice, text in (
        ("af_heart", "The committee will publish its findings next Thursday."),
        ("am_michael", "Hi!"),
    ):
        (segment,) = plan_utterance(engine._phonemizer, text, voice=voice, lang="en-us")
        tokens = [engine._vocab[symbol] for symbol in segment.phonemes.text if symbol in engine._vocab]
        feeds = {
            engine._tokens_input: np.array([[0, *tokens, 0]], dtype=engine._tokens_dtype),
            "style": engine._voice_tables.style(voice, len(tokens)),
            "speed": np.array([1.0], dtype=np.float32),
        }
        for expected, got in zip(_run(original, feeds), _run(rewritten, feeds), strict=True):
            np.testing.assert_array_equal(got, expected)
