"""The int8 Kokoro ONNX export, cut at load into the two halves a streaming synthesis needs.

**prosody** (tokens, style, speed → durations, the generator's input features, the pitch curve) runs
once per segment, exactly as the whole graph would; the **vocoder** (features, pitch, style → audio) runs
over any window of steps. What the generator computes over the whole sequence becomes explicit: the sine
source's ``phase_offset`` and every AdaIN norm's statistics (outputs ``norm{i}_mean``/``_var``, replaced
by inputs of those names when ``use_stats``; :mod:`tts_container.engines.norm_stats`). With ``use_stats``
false and a zero offset the vocoder over all steps is the whole graph bit for bit. The export is pinned by
sha256; any other graph raises :class:`UnexpectedGraph` and the engine renders whole segments. Why:
architecture §5, "Streaming inside one synthesis".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import TensorProto, helper
from onnx.utils import Extractor

DURATIONS_OUTPUT = "durations"
FEATURES = "features"  # the generator's input: (1, 512, steps)
PITCH = "pitch"  # the decoder's pitch curve, one value per step: (1, steps)
PHASE_OFFSET = "phase_offset"  # (1, 1, harmonics)
USE_STATS = "use_stats"  # bool scalar
AUDIO = "audio"

# The generator's input and the pitch curve in the int8 v1.0 export (and the hub's fp32 one).
_FEATURES_TENSOR = "/decoder/decoder/decode.3/Div_4_output_0"
_PITCH_TENSOR = "/encoder/Reshape_output_0"
_GENERATOR = "/decoder/decoder/generator/"


Consumers = dict[str, list[onnx.NodeProto]]


class UnexpectedGraph(RuntimeError):
    """The ONNX file is not the Kokoro export these edits know."""


@dataclass(frozen=True, slots=True)
class OnnxGraphs:
    """The two halves as serialized models, and how many instance norms the vocoder exposes."""

    prosody: bytes
    vocoder: bytes
    norms: int


def norm_mean(index: int) -> str:
    return f"norm{index}_mean"


def norm_var(index: int) -> str:
    return f"norm{index}_var"


def split_export(path: Path) -> OnnxGraphs:
    """Both halves of the export at ``path`` (deterministic in its input; well under a second)."""
    model = onnx.load(str(path))
    graph = model.graph
    names = {output for node in graph.node for output in node.output}
    if _FEATURES_TENSOR not in names or _PITCH_TENSOR not in names:
        raise UnexpectedGraph("the generator's input or the pitch curve is not where the v1.0 export has it")
    cast = _duration_cast(graph)
    graph.node.append(helper.make_node("Identity", [cast.output[0]], [DURATIONS_OUTPUT]))
    graph.node.append(helper.make_node("Identity", [_FEATURES_TENSOR], [FEATURES]))
    graph.node.append(helper.make_node("Identity", [_PITCH_TENSOR], [PITCH]))
    for name, elem in ((DURATIONS_OUTPUT, TensorProto.INT64), (FEATURES, TensorProto.FLOAT)):
        graph.output.append(helper.make_tensor_value_info(name, elem, None))
    graph.output.append(helper.make_tensor_value_info(PITCH, TensorProto.FLOAT, None))
    tokens = graph.input[0].name
    extractor = Extractor(model)
    prosody = extractor.extract_model([tokens, "style", "speed"], [DURATIONS_OUTPUT, FEATURES, PITCH])
    vocoder = extractor.extract_model([_FEATURES_TENSOR, _PITCH_TENSOR, "style"], [AUDIO])
    _rename_input(vocoder.graph, _FEATURES_TENSOR, FEATURES)
    _rename_input(vocoder.graph, _PITCH_TENSOR, PITCH)
    _add_phase_offset(vocoder.graph)
    norms = _expose_norms(vocoder.graph)
    return OnnxGraphs(_bytes(prosody), _bytes(vocoder), norms)


def edited_model(path: Path) -> bytes:
    """The whole export with per-token durations (int64 frames, pads included) as a second output.

    For engines that synthesize whole segments (an export :func:`split_export` does not know).
    """
    model = onnx.load(str(path))
    cast = _duration_cast(model.graph)
    model.graph.node.append(helper.make_node("Identity", [cast.output[0]], [DURATIONS_OUTPUT]))
    model.graph.output.append(helper.make_tensor_value_info(DURATIONS_OUTPUT, TensorProto.INT64, [1, None]))
    return _bytes(model)


def _bytes(model: onnx.ModelProto) -> bytes:
    return bytes(model.SerializeToString())


def _duration_cast(graph: onnx.GraphProto) -> onnx.NodeProto:
    """The Cast that turns the rounded, clipped durations into the int64 the aligner repeats frames by.

    Found by shape of computation, not by node name: Div(…, speed) → Round → Clip → Cast.
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


def _rename_input(graph: onnx.GraphProto, old: str, new: str) -> None:
    for value in graph.input:
        if value.name == old:
            value.name = new
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name == old:
                node.input[index] = new


def consumers(graph: onnx.GraphProto) -> Consumers:
    """Tensor name -> the nodes that read it (each once, even a node that reads it twice: x * x)."""
    consumers: Consumers = {}
    for node in graph.node:
        for name in dict.fromkeys(node.input):
            consumers.setdefault(name, []).append(node)
    return consumers


def drop_dead(graph: onnx.GraphProto) -> None:
    """Remove nodes no output needs and initializers no node reads."""
    needed = {output.name for output in graph.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(list(graph.node)):
        if any(output in needed for output in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    kept.reverse()
    del graph.node[:]
    graph.node.extend(kept)
    used = {name for node in kept for name in node.input}
    initializers = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(initializers)


def _add_phase_offset(graph: onnx.GraphProto) -> None:
    """``phase_offset`` is added to the sine source's cumulative sum (the generator's only CumSum)."""
    cumsums = [n for n in graph.node if n.op_type == "CumSum" and n.name.startswith(_GENERATOR)]
    if len(cumsums) != 1:
        raise UnexpectedGraph(f"expected one CumSum in the generator's sine source, found {len(cumsums)}")
    cumsum = cumsums[0]
    summed, shifted = cumsum.output[0], cumsum.output[0] + "_shifted"
    for node in consumers(graph).get(summed, []):
        for index, name in enumerate(node.input):
            if name == summed:
                node.input[index] = shifted
    add = helper.make_node("Add", [summed, PHASE_OFFSET], [shifted], name="phase_offset_add")
    nodes = list(graph.node)
    nodes.insert(nodes.index(cumsum) + 1, add)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.input.append(helper.make_tensor_value_info(PHASE_OFFSET, TensorProto.FLOAT, [1, 1, None]))


def _expose_norms(graph: onnx.GraphProto) -> int:
    """Every instance norm of the generator: its statistics as outputs, and inputs that may replace them.

    An instance norm is exported as ``d = x - ReduceMean(x)``, ``v = ReduceMean(d * d)``,
    ``y = d / Sqrt(v + eps)``. It becomes ``y = (x - m) / Sqrt(w + eps)`` with ``m, w`` either the
    input's own statistics or the given ones (``Where(use_stats, given, own)``).
    """
    readers = consumers(graph)
    chains = []
    for mean_node in graph.node:
        if mean_node.op_type != "ReduceMean" or not mean_node.name.startswith(_GENERATOR):
            continue
        subs = [n for n in readers.get(mean_node.output[0], []) if n.op_type == "Sub"]
        if len(subs) != 1:
            continue
        sub = subs[0]
        squares = [
            n for n in readers.get(sub.output[0], []) if n.op_type == "Mul" and n.input[0] == n.input[1]
        ]
        if len(squares) != 1:
            continue
        var_nodes = [n for n in readers.get(squares[0].output[0], []) if n.op_type == "ReduceMean"]
        adds = [n for n in readers.get(var_nodes[0].output[0], []) if n.op_type == "Add"] if var_nodes else []
        sqrts = [n for n in readers.get(adds[0].output[0], []) if n.op_type == "Sqrt"] if adds else []
        divs = [n for n in readers.get(sqrts[0].output[0], []) if n.op_type == "Div"] if sqrts else []
        if len(divs) != 1 or divs[0].input[0] != sub.output[0]:
            raise UnexpectedGraph(f"instance norm at {mean_node.name} is not the expected chain")
        chains.append((mean_node, sub, var_nodes[0], adds[0], divs[0]))
    if not chains:
        raise UnexpectedGraph("no instance norm found in the generator")
    graph.input.append(helper.make_tensor_value_info(USE_STATS, TensorProto.BOOL, []))
    replacements: dict[int, list[onnx.NodeProto]] = {}
    for index, (mean_node, sub, var_node, add, div) in enumerate(chains):
        own_mean, own_var = mean_node.output[0], var_node.output[0]
        eps = next(name for name in add.input if name != own_var)
        given_mean, given_var = norm_mean(index), norm_var(index)
        for name in (given_mean, given_var):
            graph.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, None, 1]))
        # The statistics of this call's input leave the graph under the same names as the inputs.
        out_mean, out_var = given_mean + "_out", given_var + "_out"
        mean, var = f"norm{index}_used_mean", f"norm{index}_used_var"
        centred, std = f"norm{index}_centred", f"norm{index}_std"
        replacements[id(div)] = [
            helper.make_node("Identity", [own_mean], [out_mean]),
            helper.make_node("Identity", [own_var], [out_var]),
            helper.make_node("Where", [USE_STATS, given_mean, own_mean], [mean]),
            helper.make_node("Where", [USE_STATS, given_var, own_var], [var]),
            helper.make_node("Sub", [sub.input[0], mean], [centred]),
            helper.make_node("Add", [var, eps], [var + "_eps"]),
            helper.make_node("Sqrt", [var + "_eps"], [std]),
            helper.make_node("Div", [centred, std], [div.output[0]]),
        ]
        for name in (out_mean, out_var):
            graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, None, 1]))
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        nodes.extend(replacements.get(id(node), [node]))
    del graph.node[:]
    graph.node.extend(nodes)
    return len(chains)
