"""The vocoder half with static int8 convolutions, derived from the export at first start and cached.

Why: the export is onnxruntime's *dynamic* quantization. Every call measures and quantizes every
activation again (``DynamicQuantizeLinear``), and its weights are unsigned, so its ``ConvInteger`` runs
onnxruntime's u8u8 path. Here the vocoder's weights are dequantized to float (the same values), then the
generator's residual convolutions are quantized again *statically*: signed per-channel weights and
unsigned activations whose ranges are calibrated once on our own sentences, so every call runs the
u8s8 kernels (VNNI where the CPU has it) with no measuring pass. The rest stays float32: the
upsampling, the harmonic source's convolutions, ``conv_post`` and the inverse STFT, and the residual
convolutions whose sound does not hold in 8 bits (:data:`FLOAT_CONVOLUTIONS`, each measured alone:
quantized, it moves the audio by more than the dynamic graph's own distance from float).

The derivation is a function of the export alone (its calibration text and voices are fixed here), so
the cached file is keyed by the export's sha256 and its own sha256 is checked at every load; a file that
fails the check is derived again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from tts_container.engines.onnx_graphs import drop_dead

logger = logging.getLogger(__name__)

STATIC_DIR = "onnx-static-int8"  # the weight cache's folder of derived static vocoders, one per export
VOCODER_FILE = "vocoder-static-int8.onnx"
# Calibration: the fraction of each activation's samples left outside its range at each end.
CALIBRATION_PERCENTILE = 99.99
SAMPLES_PER_CALL = 20_000
# The residual convolutions that stay float32: quantized alone, each moved the audio (log-mel distance
# against the float graph) more than the dynamic graph's own distance from float.
FLOAT_CONVOLUTIONS = (
    "/resblocks.1/convs1.1/",
    "/resblocks.1/convs2.1/",
    "/resblocks.1/convs1.2/",
    "/resblocks.1/convs2.2/",
    "/resblocks.3/convs2.2/",
    "/resblocks.4/convs2.2/",
    "/resblocks.5/convs2.2/",
)
_QUANTIZED_BLOCKS = ("/resblocks.", "/noise_res.")

Feeds = Mapping[str, object]


def static_vocoder(
    vocoder: bytes,
    cache_dir: Path | None,
    calibration: Callable[[], Iterable[Feeds]],
) -> bytes:
    """The static-int8 vocoder for the export's ``vocoder`` half: read from ``cache_dir`` when its
    checksum holds, else derived (``calibration`` yields the float vocoder's inputs to measure) and,
    with a ``cache_dir``, saved there with its sha256."""
    path = cache_dir / VOCODER_FILE if cache_dir is not None else None
    if path is not None and (cached := _read_checked(path)) is not None:
        return cached
    logger.info("deriving the static int8 vocoder (once per export; about a minute on 2 cores)")
    derived = derive(vocoder, calibration())
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = path.with_suffix(".partial")
        staged.write_bytes(derived)
        os.replace(staged, path)
        path.with_suffix(".sha256").write_text(hashlib.sha256(derived).hexdigest(), encoding="utf-8")
    return derived


def derive(vocoder: bytes, feeds: Iterable[Feeds]) -> bytes:
    """Dequantize ``vocoder``, calibrate its residual convolutions' activations on ``feeds`` and quantize
    them statically (QDQ, per-channel s8 weights, u8 activations)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.calibrate import TensorData, TensorsData, save_tensors_data

    model = dequantized(onnx.load_from_string(vocoder))
    nodes = quantized_convolutions(model)
    ranges = activation_ranges(model, nodes, feeds)
    # quantize_static works on files (and writes scratch files beside them): a folder of its own.
    with tempfile.TemporaryDirectory(prefix="kokoro-static-int8-") as scratch:
        source, target, cache = (Path(scratch) / name for name in ("float.onnx", "int8.onnx", "ranges"))
        onnx.save(model, source)
        data = {
            name: TensorData(lowest=np.float32(lo), highest=np.float32(hi))
            for name, (lo, hi) in ranges.items()
        }
        save_tensors_data(TensorsData(CalibrationMethod.MinMax, data), str(cache))
        quantize_static(
            str(source),
            str(target),
            None,
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=["Conv"],
            nodes_to_quantize=[node.name for node in nodes],
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            calibration_cache_path=str(cache),
            extra_options={"WeightSymmetric": True, "ActivationSymmetric": False},
        )
        return target.read_bytes()


def quantized_convolutions(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The generator's residual convolutions whose sound holds in 8 bits."""
    return [
        node
        for node in model.graph.node
        if node.op_type == "Conv"
        and any(block in node.name for block in _QUANTIZED_BLOCKS)
        and not any(conv in node.name for conv in FLOAT_CONVOLUTIONS)
    ]


def activation_ranges(
    model: onnx.ModelProto, nodes: list[onnx.NodeProto], feeds: Iterable[Feeds]
) -> dict[str, tuple[float, float]]:
    """Each quantized convolution's input and output range over ``feeds``: the
    :data:`CALIBRATION_PERCENTILE` at each end of a sample of its values, widened to hold zero."""
    tensors = sorted({name for node in nodes for name in (node.input[0], node.output[0])})
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    known = {output.name for output in probe.graph.output}
    probe.graph.output.extend(
        helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        for name in tensors
        if name not in known
    )
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    samples: dict[str, list[np.ndarray]] = {name: [] for name in tensors}
    for feed in feeds:
        for name, value in zip(tensors, session.run(tensors, dict(feed)), strict=True):
            flat = np.asarray(value, dtype=np.float32).reshape(-1)
            samples[name].append(rng.choice(flat, min(SAMPLES_PER_CALL, flat.size), replace=False))
    ranges = {}
    for name, parts in samples.items():
        if not parts:
            raise ValueError("calibration needs at least one vocoder call")
        values = np.concatenate(parts)
        low, high = np.percentile(values, [100 - CALIBRATION_PERCENTILE, CALIBRATION_PERCENTILE])
        ranges[name] = (min(float(low), 0.0), max(float(high), 0.0))
    return ranges


def dequantized(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with every dynamic-quantization chain rewritten as its float op over the same weights.

    ``ConvInteger(DynamicQuantizeLinear(x), Wq) [+ int32 bias] -> Cast -> Mul(x_scale * w_scale)`` becomes
    ``Conv(x, (Wq - w_zero) * w_scale, bias)`` and ``MatMulInteger`` likewise ``MatMul``; the chains' other
    nodes and initializers are dropped.
    """
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def array(name: str) -> np.ndarray:
        return numpy_helper.to_array(initializers[name]).astype(np.float32)

    def single(name: str, op_type: str) -> onnx.NodeProto:
        users = consumers.get(name, [])
        if len(users) != 1 or users[0].op_type != op_type:
            raise ValueError(f"{name} is not read by one {op_type}: not a dynamic-quantization chain")
        return users[0]

    replaced: dict[int, onnx.NodeProto] = {}
    weights: list[onnx.TensorProto] = []
    for node in list(graph.node):
        if node.op_type not in ("ConvInteger", "MatMulInteger"):
            continue
        quantize = producer[node.input[0]]
        if quantize.op_type != "DynamicQuantizeLinear":
            raise ValueError(f"{node.name} does not quantize its input dynamically")
        bias = None
        after = consumers[node.output[0]][0]
        if node.op_type == "ConvInteger" and after.op_type == "Add":
            # The int32 bias is the float bias divided by the scale at run time: take the float one.
            other = next(name for name in after.input if name != node.output[0])
            bias = _float_bias(producer, other, initializers)
            replaced[id(after)] = _DROP
            cast = single(after.output[0], "Cast")
        else:
            cast = single(node.output[0], "Cast")
        rescale = single(cast.output[0], "Mul")
        scale_product = producer[next(name for name in rescale.input if name != cast.output[0])]
        weight_scale = array(next(name for name in scale_product.input if name in initializers))
        quantized = array(node.input[1])
        zero = array(node.input[3]) if len(node.input) > 3 and node.input[3] else np.float32(0)
        if node.op_type == "ConvInteger":
            shape = (-1, *([1] * (quantized.ndim - 1)))
            weight = (quantized - np.reshape(zero, shape)) * np.reshape(weight_scale, shape)
            op_type, inputs_after = "Conv", [bias] if bias else []
        else:
            weight = (quantized - np.reshape(zero, (1, -1))) * np.reshape(weight_scale, (1, -1))
            op_type, inputs_after = "MatMul", []
        name = f"{node.name}_float_weight"
        weights.append(numpy_helper.from_array(weight.astype(np.float32), name))
        float_op = helper.make_node(
            op_type,
            [quantize.input[0], name, *inputs_after],
            [rescale.output[0]],
            name=node.name.removesuffix("_quant"),
        )
        float_op.attribute.extend(node.attribute)
        replaced[id(node)], replaced[id(cast)], replaced[id(rescale)] = _DROP, _DROP, float_op
    nodes = [replaced.get(id(node), node) for node in graph.node]
    del graph.node[:]
    graph.node.extend(node for node in nodes if node is not _DROP)
    graph.initializer.extend(weights)
    drop_dead(graph)
    return model


_DROP = onnx.NodeProto()


def _float_bias(
    producer: Mapping[str, onnx.NodeProto], int_bias: str, initializers: Mapping[str, onnx.TensorProto]
) -> str:
    """The float initializer behind an int32 bias (``Reshape(Cast(Floor(Div(bias, scale))))``)."""
    node = producer[int_bias]
    for expected in ("Reshape", "Cast", "Floor", "Div"):
        if node.op_type != expected:
            raise ValueError(f"the bias of {int_bias} is not Div -> Floor -> Cast -> Reshape")
        if expected == "Div":
            break
        node = producer[node.input[0]]
    if node.input[0] not in initializers:
        raise ValueError(f"the bias of {int_bias} is not an initializer")
    return str(node.input[0])


def _read_checked(path: Path) -> bytes | None:
    """The cached file when its recorded sha256 holds, else None (derived again)."""
    try:
        data = path.read_bytes()
        recorded = path.with_suffix(".sha256").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != recorded:
        logger.warning("%s does not match its recorded sha256: derived again", path)
        return None
    return data
