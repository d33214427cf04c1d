"""Kokoro's torch checkpoint rebuilt from the real int8 export (:mod:`tts_container.weights.conversion`).

Three claims, on the export the registry packages carry: the result fills every ``KModel`` weight with
its shape and loads through the production loader; the torch model with it computes what the export
computes once its weights are dequantized (:mod:`tests.tts_container.dequantized_export`, written
independently of the converter), to float rounding, from the duration head to the generator's output;
and whatever the converter cannot place is reported, all of it at once.

Against the export's own int8 run the torch model differs by the int8 activations' rounding, which
``test_torch_engine_converted.py`` measures on speech.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from tts_container.weights.cache import TORCH_FILE, CachedWeights, sha256_of
from tts_container.weights.conversion import (
    ConversionError,
    StateDicts,
    convert_onnx_to_state_dict,
    module_path,
    save_checkpoint,
)
from tts_container.weights.provisioning import ensure_weights
from tts_container.weights.sources import DERIVED_TORCH_SHA256, ONNX_INT8_SHA256

if TYPE_CHECKING:
    from kokoro import KModel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("kokoro") is None or importlib.util.find_spec("onnx") is None,
        reason="needs the torch extra (kokoro) and the onnx extra",
    ),
]

# Tensors of the int8 export (pinned by sha256, so its names are stable) the float twin is read at.
DURATION_LOGITS = "/encoder/predictor/duration_proj/linear_layer/Add_output_0"
DURATIONS = "/encoder/Clip_output_0"  # rounded, at least 1, still float
PITCH = "/encoder/Reshape_output_0"  # the generator's F0 input
FEATURES = "/decoder/decoder/decode.3/Div_4_output_0"  # the generator's input
HARMONIC_SPECTRUM = "/decoder/decoder/generator/Concat_3_output_0"  # [magnitudes, phases] of the source
AUDIO = "audio"
# The export's inverse STFT does not divide by its window's overlap (1.5 for a periodic Hann window of 20
# samples every 5); torch.istft, which kokoro calls, does.
EXPORT_ISTFT_GAIN = 1.5
SENTENCE = "Sailing boats drifted slowly past the old lighthouse."


@pytest.fixture(scope="module")
def cache() -> CachedWeights:
    return ensure_weights(part="onnx")


@pytest.fixture(scope="module")
def converted(cache: CachedWeights) -> StateDicts:
    return convert_onnx_to_state_dict(cache.onnx_model, cache.config)


@pytest.fixture(scope="module")
def checkpoint(converted: StateDicts, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("derived") / TORCH_FILE
    save_checkpoint(converted, path)
    return path


@pytest.fixture(scope="module")
def kmodel(cache: CachedWeights, checkpoint: Path) -> KModel:
    """The production loader on the written file: every key checked, nothing left at its random init."""
    import torch

    from tts_container.engines.torch_engine import load_kmodel

    return load_kmodel(cache.config, checkpoint, torch.device("cpu"))


def test_module_path_follows_the_export_s_scope_names() -> None:
    assert module_path("/decoder/decoder/generator/ups.0/ConvTranspose") == "decoder.generator.ups.0"
    assert module_path("/encoder/text_encoder/cnn.0/cnn.0.0/Conv_quant") == "text_encoder.cnn.0.0"
    assert module_path("/decoder/decoder/asr_res/asr_res.0/Conv_quant") == "decoder.asr_res.0"
    albert = "/encoder/bert/encoder/albert_layer_groups.0/albert_layers.0"
    assert module_path(f"{albert}/attention_7/query_7/MatMul_quant") == (
        "bert.encoder.albert_layer_groups.0.albert_layers.0.attention.query"
    )
    assert module_path("/encoder/F0.1/conv1x1/Conv_quant") == "F0.1.conv1x1"  # outside predictor's scope


def test_every_kmodel_weight_is_filled_with_its_shape_and_loaded_by_the_production_loader(
    converted: StateDicts, kmodel: KModel
) -> None:
    import torch

    assert list(converted) == ["bert", "bert_encoder", "predictor", "text_encoder", "decoder"]
    for component, weights in converted.items():
        loaded = getattr(kmodel, component).state_dict()
        assert list(weights) == list(loaded)
        for name, tensor in weights.items():
            assert tensor.shape == loaded[name].shape and tensor.dtype == torch.float32, name
            assert torch.equal(tensor, loaded[name]), f"{component}.{name} was not loaded"
            assert torch.isfinite(tensor).all(), name
    assert sum(t.numel() for w in converted.values() for t in w.values()) == 81_810_022  # Kokoro-82M


def test_the_checkpoint_written_from_the_registry_export_is_the_pinned_one(
    cache: CachedWeights, checkpoint: Path
) -> None:
    """Same export, same bytes (numpy arithmetic; the name inside torch's archive is the file's)."""
    if sha256_of(cache.onnx_model) != ONNX_INT8_SHA256:
        pytest.skip("the cache holds the hub's int8 export, not the registry packages' one")
    assert checkpoint.stat().st_size == 327_460_791
    assert sha256_of(checkpoint) == DERIVED_TORCH_SHA256


def test_weight_norm_modules_compute_the_dequantized_weight(kmodel: KModel) -> None:
    """``v`` is the export's weight and ``g`` its norm per output channel, so ``g * v / ||v||`` is ``v``;
    an output channel the export holds as all zeros (94 of them) has ``g = 0`` (and ``v = 1``)."""
    import torch

    modules = [m for m in kmodel.modules() if hasattr(m, "weight_v")]
    assert len(modules) == 89
    dead = 0
    for module in modules:
        effective = torch._weight_norm(module.weight_v, module.weight_g, 0)
        alive = module.weight_g > 0
        dead += int((~alive).sum())
        assert torch.allclose(effective, torch.where(alive, module.weight_v, 0.0), rtol=2e-6, atol=0.0)
    assert dead == 94


def test_the_torch_model_computes_what_the_export_computes_on_float_activations(
    cache: CachedWeights, kmodel: KModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every stage against the export with its weights dequantized and its activations left in float.

    The generator is compared from the same source spectrum: both compute the phase of the sine source's
    near-silent STFT bins from rounding noise (atan2 of values ~1e-7), so there they agree on nothing,
    while every weight after it is checked by feeding the export's spectrum to the torch generator.
    """
    import onnx
    import onnxruntime as ort
    import torch

    from tests.tts_container.dequantized_export import dequantized_export
    from tts_container.engines.voices import VoiceTables
    from tts_container.text.g2p import Phonemizer

    twin = onnx.load_from_string(dequantized_export(cache.onnx_model))
    names = [DURATION_LOGITS, DURATIONS, PITCH, FEATURES, HARMONIC_SPECTRUM, AUDIO]
    del twin.graph.output[:]
    twin.graph.output.extend(helper_outputs(names))
    session = ort.InferenceSession(twin.SerializeToString(), providers=["CPUExecutionProvider"])
    phonemes = Phonemizer().phonemize(SENTENCE, lang="en-us", voice="af_heart")
    ids = [kmodel.vocab[symbol] for symbol in phonemes if symbol in kmodel.vocab]
    style = VoiceTables.load(cache.voices).style("af_heart", len(ids))
    tokens = np.array([[0, *ids, 0]], dtype=np.int64)
    feed = {"tokens": tokens, "style": style, "speed": np.ones(1, dtype=np.float32)}
    expected = dict(zip(names, session.run(names, feed), strict=True))

    # The export has no random initial phase and no noise in its sine source; neither may torch here.
    monkeypatch.setattr(torch, "rand", lambda *shape, **kwargs: torch.zeros(*shape, **kwargs))
    monkeypatch.setattr(torch, "randn_like", torch.zeros_like)
    spectrum = torch.from_numpy(expected[HARMONIC_SPECTRUM])
    generator = kmodel.decoder.generator
    monkeypatch.setattr(generator.stft, "transform", lambda _: (spectrum[:, :11], spectrum[:, 11:]))
    seen: dict[str, Any] = {}
    hooks = [
        kmodel.predictor.duration_proj.register_forward_hook(record(seen, "logits")),
        generator.register_forward_pre_hook(
            lambda _, inputs: seen.update(features=inputs[0], pitch=inputs[2])
        ),
    ]
    try:
        with torch.inference_mode():
            audio, durations = kmodel.forward_with_tokens(
                torch.from_numpy(tokens), torch.from_numpy(style), 1
            )
    finally:
        for hook in hooks:
            hook.remove()

    assert relative_error(expected[DURATION_LOGITS], seen["logits"]) < 1e-5
    assert durations.tolist() == expected[DURATIONS].reshape(-1).astype(int).tolist()
    assert relative_error(expected[PITCH], seen["pitch"]) < 1e-4
    assert relative_error(expected[FEATURES], seen["features"]) < 1e-5
    assert relative_error(expected[AUDIO], EXPORT_ISTFT_GAIN * audio) < 1e-4


def test_everything_the_converter_cannot_place_is_reported_at_once(
    cache: CachedWeights, tmp_path: Path
) -> None:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(cache.onnx_model))
    post = next(n for n in model.graph.node if n.name == "/decoder/decoder/generator/conv_post/Conv")
    post.name = "/decoder/decoder/generator/conv_after/Conv"  # a module KModel does not have
    alpha = next(
        t for t in model.graph.initializer if t.name == "decoder.decoder.generator.resblocks.0.alpha1.0"
    )
    model.graph.initializer.remove(alpha)
    extra = numpy_helper.from_array(np.ones(3, dtype=np.float32), "decoder.decoder.generator.extra.bias")
    model.graph.initializer.append(extra)
    edited = tmp_path / "edited.onnx"
    onnx.save(model, str(edited))

    with pytest.raises(ConversionError) as raised:
        convert_onnx_to_state_dict(edited, cache.config)
    message = str(raised.value)
    assert "Conv in 'decoder.generator.conv_after', which no KModel module holds" in message
    assert "decoder.generator.conv_post.weight_v: not in the export" in message
    assert "decoder.generator.resblocks.0.alpha1.0: not in the export" in message
    assert "decoder.decoder.generator.extra.bias: an initializer of the export nothing placed" in message


def helper_outputs(names: list[str]) -> list[Any]:
    from onnx import TensorProto, helper

    return [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in names]


def record(seen: dict[str, Any], key: str) -> Callable[..., None]:
    def hook(_module: object, _inputs: object, output: object) -> None:
        seen[key] = output

    return hook


def relative_error(expected: Any, actual: Any) -> float:
    """``||expected - actual|| / ||expected||`` over the flattened arrays (torch tensors accepted)."""
    reference = np.asarray(expected, dtype=np.float64).reshape(-1)
    value = np.asarray(actual.detach() if hasattr(actual, "detach") else actual, dtype=np.float64).reshape(-1)
    assert reference.shape == value.shape
    return float(np.linalg.norm(reference - value) / np.linalg.norm(reference))
