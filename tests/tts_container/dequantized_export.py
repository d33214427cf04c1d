"""The int8 Kokoro export with its quantized ops put back as float ops on the dequantized weights.

A reference for the checkpoint :mod:`tts_container.weights.conversion` derives: both hold the same
weights, and both compute in float, so the torch model must reproduce this graph's durations and features
to float rounding, where against the int8 graph itself it differs by the int8 activations' rounding. It
is written independently of the converter (ONNX layouts kept, no torch names): a gate order or transpose
the converter got wrong shows up as a mismatch here instead of being copied.

Each integer op's chain is replaced by one float op that writes the chain's float output:
``DynamicQuantizeLinear(x) -> ConvInteger/MatMulInteger [-> Add int32 bias] -> Cast -> Mul(scales)``
becomes ``Conv(x, W, b)`` / ``MatMul(x, W)``; ``DynamicQuantizeLSTM`` becomes ``LSTM`` (weights transposed
to ONNX's ``[directions, 4 * hidden, inputs]``); a quantized table's ``Gather -> DequantizeLinear`` becomes
a ``Gather`` on the float table. The nodes left without consumers are dropped.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


def dequantized_export(path: Path) -> bytes:
    """The float twin of the int8 export at ``path``, serialized."""
    model = onnx.load(str(path))
    graph = model.graph
    arrays = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    new_initializers: list[onnx.TensorProto] = []
    replaced: dict[str, onnx.NodeProto] = {}  # name of the node a replacement stands in for -> it
    made: set[str] = set()

    def add(name: str, value: np.ndarray) -> str:
        new_initializers.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def float_weight(weight: str, zero_point: str, scale_name: str, axes: tuple[int, ...]) -> str:
        """One float initializer per quantized one (ALBERT's layer is run 12 times on the same weights)."""
        name = f"{weight}/dequantized"
        if name not in made:
            made.add(add(name, dequantized(weight, zero_point, arrays[scale_name].astype(np.float32), axes)))
        return name

    def dequantized(weight: str, zero_point: str, scale: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        q = arrays[weight].astype(np.float32)
        zp = arrays[zero_point].astype(np.float32) if zero_point else np.zeros((), np.float32)
        return (q - _along(zp, q.shape, axes)) * _along(scale, q.shape, axes)

    for node in graph.node:
        if node.op_type in ("ConvInteger", "MatMulInteger"):
            source = producer[node.input[0]]
            assert source.op_type == "DynamicQuantizeLinear", node.name
            step = consumers[node.output[0]][0]
            bias_name = None
            if step.op_type == "Add":
                bias_name = _float_bias(next(n for n in step.input if n != node.output[0]), producer, arrays)
                step = consumers[step.output[0]][0]
            assert step.op_type == "Cast", node.name
            rescale = consumers[step.output[0]][0]
            scales = producer[next(n for n in rescale.input if n != step.output[0])]
            weight_scale = next(n for n in scales.input if n in arrays)
            zero_point = node.input[3] if len(node.input) > 3 else ""
            if node.op_type == "ConvInteger":
                inputs = [source.input[0], float_weight(node.input[1], zero_point, weight_scale, (0,))]
                if bias_name:
                    inputs.append(add(f"{node.name}/float_bias", arrays[bias_name].astype(np.float32)))
                float_op = helper.make_node("Conv", inputs, [rescale.output[0]], name=f"{node.name}/float")
                float_op.attribute.extend(node.attribute)
            else:
                inputs = [source.input[0], float_weight(node.input[1], zero_point, weight_scale, (1,))]
                float_op = helper.make_node("MatMul", inputs, [rescale.output[0]], name=f"{node.name}/float")
            replaced[rescale.name] = float_op
        elif node.op_type == "DynamicQuantizeLSTM":
            inputs = list(node.input) + [""] * (12 - len(node.input))
            w = dequantized(inputs[1], inputs[9], arrays[inputs[8]].astype(np.float32), (0, 2))
            r = dequantized(inputs[2], inputs[11], arrays[inputs[10]].astype(np.float32), (0, 2))
            lstm_inputs = [
                inputs[0],
                add(f"{node.name}/W", w.transpose(0, 2, 1)),
                add(f"{node.name}/R", r.transpose(0, 2, 1)),
                *inputs[3:8],
            ]
            while lstm_inputs and not lstm_inputs[-1]:
                lstm_inputs.pop()
            float_op = helper.make_node("LSTM", lstm_inputs, list(node.output), name=f"{node.name}/float")
            float_op.attribute.extend(node.attribute)
            replaced[node.name] = float_op
        elif node.op_type == "Gather" and arrays.get(node.input[0]) is not None:
            table = arrays[node.input[0]]
            if table.dtype in (np.int8, np.uint8):
                dequantize = consumers[node.output[0]][0]
                assert dequantize.op_type == "DequantizeLinear", node.name
                scale = arrays[dequantize.input[1]].astype(np.float32)
                zero_point = dequantize.input[2] if len(dequantize.input) > 2 else ""
                w = dequantized(node.input[0], zero_point, scale, ())
                float_op = helper.make_node(
                    "Gather",
                    [add(f"{node.name}/float_table", w), node.input[1]],
                    [dequantize.output[0]],
                    name=f"{node.name}/float",
                )
                float_op.attribute.extend(node.attribute)
                replaced[dequantize.name] = float_op

    nodes = [replaced.get(node.name, node) for node in graph.node]
    nodes = _live(nodes, {output.name for output in graph.output})
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(new_initializers)
    used = {name for node in graph.node for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return model.SerializeToString()


def _along(values: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    """A scalar, or one value per index of ``axes`` (or of its first axis alone: an LSTM's per-direction
    scale), shaped to broadcast over ``shape``."""
    if values.size == 1:
        return values.reshape(())
    chosen = axes if values.size == int(np.prod([shape[a] for a in axes])) else axes[:1]
    return values.reshape([shape[a] if a in chosen else 1 for a in range(len(shape))])


def _float_bias(tensor: str, producer: dict[str, onnx.NodeProto], arrays: dict[str, np.ndarray]) -> str:
    """The float bias behind a conv's run-time int32 bias (Div(bias, scale) -> Floor -> Cast -> Reshape)."""
    while True:
        node = producer[tensor]
        if node.op_type == "Div" and node.input[0] in arrays:
            return node.input[0]
        tensor = node.input[0]


def _live(nodes: list[onnx.NodeProto], outputs: set[str]) -> list[onnx.NodeProto]:
    """``nodes`` (in order) that contribute to ``outputs``."""
    producer = {output: index for index, node in enumerate(nodes) for output in node.output}
    needed: set[int] = set()
    stack = list(outputs)
    while stack:
        index = producer.get(stack.pop())
        if index is None or index in needed:
            continue
        needed.add(index)
        stack.extend(nodes[index].input)
    return [node for index, node in enumerate(nodes) if index in needed]
