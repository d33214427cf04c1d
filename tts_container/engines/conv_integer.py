"""The export's integer convolutions rewritten as unsigned-by-signed integer matrix products, bit for bit.

onnxruntime runs ``ConvInteger`` over unsigned weights with its u8u8 kernels; ``MatMulInteger`` over
signed weights has the twice faster u8s8 ones. Each stride-1, ungrouped convolution becomes its unrolled
input columns times the weights shifted into signed bytes, with a column of ones whose row sums restore
the shift exactly. Why and how: docs/architecture.md, "Integer convolutions as u8s8 matrix products".
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tts_container.engines.onnx_graphs import drop_dead

_LAST = np.iinfo(np.int64).max  # a Slice end past any length


def as_matmuls(model_bytes: bytes) -> tuple[bytes, int]:
    """``model_bytes`` with every stride-1, ungrouped ``ConvInteger`` over unsigned 1-D weights (a scalar
    zero point each) rewritten as above, and how many were."""
    model = onnx.load_from_string(model_bytes)
    graph = model.graph
    constants = {init.name: init for init in graph.initializer}
    added: list[onnx.TensorProto] = []

    def constant(name: str, value: np.ndarray) -> str:
        added.append(numpy_helper.from_array(value, name))
        return name

    def ints(name: str, *values: int) -> str:
        return constant(name, np.array(values, dtype=np.int64))

    nodes: list[onnx.NodeProto] = []
    rewritten = 0
    for node in graph.node:
        attributes = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
        weight = constants.get(node.input[1]) if node.op_type == "ConvInteger" else None
        weight_zero = constants.get(node.input[3]) if len(node.input) > 3 else None
        if (
            weight is None
            or weight_zero is None
            or weight.data_type != TensorProto.UINT8
            or len(weight.dims) != 3
            or numpy_helper.to_array(weight_zero).size != 1
            or attributes.get("group", 1) != 1
            or any(stride != 1 for stride in attributes.get("strides", [1]))
        ):
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weight).astype(np.int16)
        outputs, channels, taps = w.shape
        dilation = attributes.get("dilations", [1])[0]
        before, after = attributes.get("pads", [0, 0])
        prefix = f"{node.name}/u8s8/"
        x, x_zero = node.input[0], node.input[2]
        columns = np.empty((taps * channels, outputs + 1), dtype=np.int8)
        columns[:, :outputs] = (w - 128).transpose(2, 1, 0).reshape(taps * channels, outputs)
        columns[:, outputs] = 1
        time_axis, last_axis = ints(prefix + "axis1", 1), ints(prefix + "axis2", 2)
        steps = prefix + "steps"
        nodes.append(helper.make_node("Transpose", [x], [steps], perm=[0, 2, 1]))
        if before or after:
            pads = ints(prefix + "pads", 0, before, 0, 0, after, 0)
            nodes.append(helper.make_node("Pad", [steps, pads, x_zero], [prefix + "padded"]))
            steps = prefix + "padded"
        sliced = []
        for tap in range(taps):
            back = (taps - 1 - tap) * dilation
            bounds = [ints(f"{prefix}start{tap}", tap * dilation), ints(f"{prefix}end{tap}", -back or _LAST)]
            sliced.append(f"{prefix}tap{tap}")
            nodes.append(helper.make_node("Slice", [steps, *bounds, time_axis], [sliced[-1]]))
        unrolled = sliced[0]
        if taps > 1:
            unrolled = prefix + "columns"
            nodes.append(helper.make_node("Concat", sliced, [unrolled], axis=2))
        product, weights = prefix + "product", constant(prefix + "weights", columns)
        nodes.append(helper.make_node("MatMulInteger", [unrolled, weights, x_zero], [product]))
        zero, width = ints(prefix + "zero", 0), ints(prefix + "width", outputs)
        shift_by = 128 - int(numpy_helper.to_array(weight_zero))
        shift = constant(prefix + "shift", np.array(shift_by, dtype=np.int32))
        nodes += [
            helper.make_node("Slice", [product, zero, width, last_axis], [prefix + "main"]),
            helper.make_node(
                "Slice", [product, width, ints(prefix + "all", outputs + 1), last_axis], [prefix + "row_sums"]
            ),
            helper.make_node("Mul", [prefix + "row_sums", shift], [prefix + "correction"]),
            helper.make_node("Add", [prefix + "main", prefix + "correction"], [prefix + "sum"]),
            helper.make_node("Transpose", [prefix + "sum"], [node.output[0]], perm=[0, 2, 1]),
        ]
        rewritten += 1
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(added)
    drop_dead(graph)
    return model.SerializeToString(), rewritten
