"""The int8 Kokoro ONNX export, edited at load so it also returns every token's duration.

Why edit the graph: the export returns audio only, but Kokoro decides how long every phoneme lasts
before it makes a sample (``durations = round(sigmoid(...).sum() / speed)``, then each phoneme's frames
are repeated that many times). Exposing that tensor gives word timings from the model itself, which
the torch engine gets from ``KModel`` directly. The audio is unchanged: the tensor only gains a second
consumer. (Capping the long leading pad to skip synthesizing its silence was tried: it is not free,
the first words lose their sound, so the durations are left as the model predicts them.)

Why at load and not as a second file in the cache: the edit is two nodes on the sha256-checked cache
file, takes well under a second, and is the same every time; a derived 92 MB file would need its own
provenance and would go stale whenever the source did. ``edited_model`` is deterministic in its input.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

DURATIONS_OUTPUT = "durations"


class UnexpectedGraph(RuntimeError):
    """The ONNX file is not the Kokoro export this edit knows (no duration rounding feeding the aligner)."""


def _duration_cast(graph: onnx.GraphProto) -> onnx.NodeProto:
    """The Cast that turns the rounded, clipped durations into the int64 the aligner repeats frames by.

    Found by shape of the computation, not by node name: Div(…, speed) → Round → Clip → Cast.
    """
    producer = {output: node for node in graph.node for output in node.output}
    for node in graph.node:
        if node.op_type != "Cast" or not node.input:
            continue
        clip = producer.get(node.input[0])
        round_ = producer.get(clip.input[0]) if clip is not None and clip.op_type == "Clip" else None
        div = producer.get(round_.input[0]) if round_ is not None and round_.op_type == "Round" else None
        if div is not None and div.op_type == "Div" and "speed" in div.input:
            return node
    raise UnexpectedGraph("no Div(speed) -> Round -> Clip -> Cast chain: not Kokoro's duration predictor")


def edited_model(path: Path) -> bytes:
    """The model at ``path`` with the per-token durations (int64 frames, pads included) as an output."""
    model = onnx.load(str(path))
    graph = model.graph
    cast = _duration_cast(graph)
    graph.node.append(helper.make_node("Identity", [cast.output[0]], [DURATIONS_OUTPUT]))
    graph.output.append(helper.make_tensor_value_info(DURATIONS_OUTPUT, TensorProto.INT64, [1, None]))
    return bytes(model.SerializeToString())
