"""Kokoro-82M's torch checkpoint rebuilt from its int8 ONNX export, for machines that cannot download it.

:func:`convert_onnx_to_state_dict` returns, per ``KModel`` component, a float32 state dict whose names
and shapes are exactly a ``KModel``'s from ``config.json``; a weight it cannot fill, a tensor it cannot
place or a shape that differs raises :class:`ConversionError` listing every one. :func:`save_checkpoint`
writes it as the hub's ``kokoro-v1_0.pth``. The values are the int8 weights dequantized (the torch model
computes what the int8 model does, in float), and the same export gives the same bytes. Each weight is
found by the module that ran its node (:func:`module_path`), never by its shape: docs/architecture.md,
"The checkpoint derived from the ONNX export".
"""

from __future__ import annotations

import re
import tempfile
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tts_container.weights.cache import CONFIG_FILE

if TYPE_CHECKING:
    import onnx
    import torch

Array = npt.NDArray[np.float32]
StateDicts = dict[str, dict[str, "torch.Tensor"]]

# KModel uses its repo id only to name hub files; passing it silences a warning (nothing is downloaded:
# the config and an empty checkpoint are local files).
_REPO_ID = "hexgrad/Kokoro-82M"
# The hub file's keys carry DataParallel's prefix; the torch engine's loader accepts both forms.
_DATA_PARALLEL_PREFIX = "module."
# The export wraps KModel in two modules; its initializer names start with their attribute names.
_WRAPPER_PREFIXES = ("encoder.", "decoder.")
# Scopes whose constants kokoro computes itself (the inverse STFT's basis and window sum): no weights.
_FIXED_SCOPES = frozenset({"decoder.generator.istft.stft"})
# An ONNX tensor name the quantizer gave a quantized copy of a float initializer.
_QUANTIZED_SUFFIX = "_quantized"
_REPEAT_SUFFIX = re.compile(r"_\d+$")
_FLOAT_TYPES = frozenset({1, 2, 3})  # TensorProto FLOAT, UINT8, INT8: what a weight can be stored as


class ConversionError(RuntimeError):
    """The export does not map onto the model built from ``config.json``: the message lists every problem."""


def module_path(scope: str) -> str:
    """The torch module a node ran in, from its ONNX scope name.

    ``/decoder/decoder/generator/ups.0/ConvTranspose`` -> ``decoder.generator.ups.0``: the first segment
    is the export's wrapper and the last the op itself; a module run again gets a
    ``_<n>`` suffix (ALBERT's one layer, run 12 times: ``attention_3``); a child of a ``Sequential`` repeats
    its parent's name (``cnn.0/cnn.0.0`` is ``cnn.0.0``).
    """
    path: list[str] = []
    for segment in scope.strip("/").split("/")[1:-1]:
        name = _REPEAT_SUFFIX.sub("", segment)
        if path and name.startswith(path[-1] + "."):
            path[-1] = name
        else:
            path.append(name)
    return ".".join(path)


def convert_onnx_to_state_dict(onnx_path: Path | str, config_path: Path | str | None = None) -> StateDicts:
    """Every ``KModel`` weight, from the int8 export at ``onnx_path``: ``{component: {name: tensor}}``.

    ``config_path`` (default: ``config.json`` beside the export) builds the ``KModel`` whose names and
    shapes the result must match; each component's dict loads with ``load_state_dict(strict=True)``.
    """
    import onnx
    import torch

    onnx_path = Path(onnx_path)
    config = Path(config_path) if config_path is not None else onnx_path.with_name(CONFIG_FILE)
    model = _Model.build(config)
    export = _Export(onnx.load(str(onnx_path)), model)
    values = export.weights()
    return {
        component: {
            name: torch.from_numpy(np.array(values[f"{component}.{name}"], dtype=np.float32, order="C"))
            for name in model.shapes[component]
        }
        for component in model.shapes
    }


def save_checkpoint(state: Mapping[str, Mapping[str, torch.Tensor]], path: Path) -> None:
    """Write ``state`` as the hub's ``kokoro-v1_0.pth``: a state dict per component, keys with ``module.``."""
    import torch

    torch.save(
        {
            component: {f"{_DATA_PARALLEL_PREFIX}{name}": tensor for name, tensor in weights.items()}
            for component, weights in state.items()
        },
        path,
    )


def derive_checkpoint(onnx_path: Path, config_path: Path, target: Path) -> None:
    """Convert the export at ``onnx_path``, write the checkpoint to ``target``. Name it ``kokoro-v1_0.pth``:
    torch stores the file's name inside it, so only the same name gives the same bytes."""
    save_checkpoint(convert_onnx_to_state_dict(onnx_path, config_path), target)


@dataclass(frozen=True)
class _Model:
    """What the checkpoint must hold: each component's parameter names and shapes; which modules exist."""

    shapes: dict[str, dict[str, tuple[int, ...]]]
    modules: frozenset[str]
    instance_norms: frozenset[str]

    @classmethod
    def build(cls, config: Path) -> _Model:
        """A ``KModel`` from ``config`` on the meta device (shapes only, no memory, no random init)."""
        import torch
        from kokoro import KModel

        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            # kokoro 0.9.4's module definitions warn about a one-layer LSTM with dropout and the deprecated
            # weight_norm API; neither matters for reading shapes.
            warnings.simplefilter("ignore")
            empty = Path(tmp) / "empty.pth"
            torch.save({}, empty)
            with torch.device("meta"):
                kmodel = KModel(repo_id=_REPO_ID, config=str(config), model=str(empty))
        shapes = {
            component: {name: tuple(tensor.shape) for name, tensor in child.state_dict().items()}
            for component, child in kmodel.named_children()
            if any(True for _ in child.parameters())
        }
        modules = dict(kmodel.named_modules())
        norms = {name for name, module in modules.items() if isinstance(module, torch.nn.InstanceNorm1d)}
        return cls(shapes, frozenset(modules), frozenset(norms))

    @property
    def expected(self) -> dict[str, tuple[int, ...]]:
        """``component.name`` -> shape, over every component."""
        return {f"{c}.{name}": shape for c, weights in self.shapes.items() for name, shape in weights.items()}


class _Export:
    """The export's graph, read weight by weight into ``KModel`` names."""

    def __init__(self, model: onnx.ModelProto, kmodel: _Model) -> None:
        from onnx import numpy_helper

        self._to_array = numpy_helper.to_array
        self._kmodel = kmodel
        self._expected = kmodel.expected
        self._initializers = {tensor.name: tensor for tensor in model.graph.initializer}
        self._nodes = list(model.graph.node)
        self._producer = {output: node for node in self._nodes for output in node.output}
        self._consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in self._nodes:
            for name in node.input:
                self._consumers[name].append(node)
        self._values: dict[str, tuple[Array, str]] = {}
        self._read: set[str] = set()
        self._problems: list[str] = []

    def weights(self) -> dict[str, Array]:
        """Every expected ``component.name`` -> float32 array; raise :class:`ConversionError` otherwise."""
        readers = {
            "ConvInteger": self._conv_integer,
            "MatMulInteger": self._matmul_integer,
            "DynamicQuantizeLSTM": self._lstm,
            "Gather": self._gather,
            "Conv": self._float_conv,
            "ConvTranspose": self._float_conv,
            "MatMul": self._float_matmul,
            "LayerNormalization": self._layer_norm,
            "SkipLayerNormalization": self._skip_layer_norm,
        }
        for node in self._nodes:
            if module_path(_scope(node)) in _FIXED_SCOPES:
                self._read.update(name for name in node.input if name in self._initializers)
                continue
            reader = readers.get(node.op_type)
            if reader is None or not any(name in self._initializers for name in node.input):
                continue
            try:
                reader(node)
            except ConversionError as exc:
                self._problems.append(str(exc))
        self._read_direct_parameters()
        values = self._split_weight_norms({key: value for key, (value, _) in self._values.items()})
        self._fill_absent(values)
        self._check(values)
        return values

    # --- the readers, one per kind of node that takes a weight ---

    def _conv_integer(self, node: onnx.NodeProto) -> None:
        module = self._module(node)
        _, scale, bias = self._rescaling(node)
        weight = self._dequantize(node.input[1], _input(node, 3), scale, axes=(0,))
        self._put(f"{module}.weight", weight, node, node.input[1])
        if bias is not None:
            self._put(f"{module}.bias", self._array(bias), node, bias)

    def _matmul_integer(self, node: onnx.NodeProto) -> None:
        module = self._module(node)
        rescaled, scale, _ = self._rescaling(node)
        weight = self._dequantize(node.input[1], _input(node, 3), scale, axes=(1,))
        self._put(f"{module}.weight", weight.T, node, node.input[1])
        if (bias := self._bias_after(rescaled, weight.shape[1])) is not None:
            self._put(f"{module}.bias", self._array(bias), node, bias)

    def _lstm(self, node: onnx.NodeProto) -> None:
        module = self._module(node)
        attributes = _attributes(node)
        hidden = int(attributes["hidden_size"])
        directions = {"forward": ("",), "bidirectional": ("", "_reverse")}[
            attributes.get("direction", "forward")
        ]
        if _input(node, 7):
            raise ConversionError(f"{node.name}: peephole weights, which torch's LSTM does not have")
        for state in (_input(node, 5), _input(node, 6)):  # initial h and c: torch starts from zeros too
            if state and state in self._initializers:
                self._identity_constant(state, 0.0, node)
        w = self._dequantize(node.input[1], _input(node, 9), _input(node, 8), axes=(0, 2))
        r = self._dequantize(node.input[2], _input(node, 11), _input(node, 10), axes=(0, 2))
        b = self._array(node.input[3])
        if (
            w.shape[0] != len(directions)
            or w.shape[2] != 4 * hidden
            or b.shape != (len(directions), 8 * hidden)
        ):
            raise ConversionError(f"{node.name}: W {w.shape}, B {b.shape} do not fit hidden_size {hidden}")
        for direction, suffix in enumerate(directions):
            self._put(f"{module}.weight_ih_l0{suffix}", _torch_gates(w[direction].T), node, node.input[1])
            self._put(f"{module}.weight_hh_l0{suffix}", _torch_gates(r[direction].T), node, node.input[2])
            self._put(f"{module}.bias_ih_l0{suffix}", _torch_gates(b[direction, : 4 * hidden]), node, None)
            self._put(f"{module}.bias_hh_l0{suffix}", _torch_gates(b[direction, 4 * hidden :]), node, None)

    def _gather(self, node: onnx.NodeProto) -> None:
        table = node.input[0]
        if self._initializers.get(table) is None or self._initializers[table].data_type not in _FLOAT_TYPES:
            return
        module = self._module(node)
        if self._initializers[table].data_type == 1:
            weight = self._array(table)
        else:  # a quantized table: the rows are dequantized after the lookup
            dequantize = self._only_consumer(node.output[0], "DequantizeLinear")
            weight = self._dequantize(table, _input(dequantize, 2), dequantize.input[1], axes=())
        self._put(f"{module}.weight", weight, node, table)

    def _float_conv(self, node: onnx.NodeProto) -> None:
        module = self._module(node)
        self._put(f"{module}.weight", self._array(node.input[1]), node, node.input[1])
        if bias := _input(node, 2):
            self._put(f"{module}.bias", self._array(bias), node, bias)

    def _float_matmul(self, node: onnx.NodeProto) -> None:
        if node.input[1] not in self._initializers:
            return
        module = self._module(node)
        weight = self._array(node.input[1])
        self._put(f"{module}.weight", weight.T, node, node.input[1])
        if (bias := self._bias_after(node.output[0], weight.shape[1])) is not None:
            self._put(f"{module}.bias", self._array(bias), node, bias)

    def _layer_norm(self, node: onnx.NodeProto) -> None:
        self._norm_parameters(node, _input(node, 1), _input(node, 2))

    def _skip_layer_norm(self, node: onnx.NodeProto) -> None:
        if _input(node, 4):  # a fused bias belongs to the Linear before it, which this reader cannot see
            raise ConversionError(f"{_scope(node)}: SkipLayerNormalization with a fused bias")
        self._norm_parameters(node, _input(node, 2), _input(node, 3))

    def _norm_parameters(self, node: onnx.NodeProto, scale: str, shift: str) -> None:
        """A layer norm's scale and shift; kokoro's own LayerNorm names them gamma and beta, and
        AdaLayerNorm has none (the export passes ones and zeros, checked)."""
        module = self._module(node)
        names = {name.rpartition(".")[2] for name in self._expected if name.rpartition(".")[0] == module}
        for tensor, candidates, identity in (
            (scale, ("weight", "gamma"), 1.0),
            (shift, ("bias", "beta"), 0.0),
        ):
            if not tensor:
                continue
            found = [name for name in candidates if name in names]
            if found:
                self._put(f"{module}.{found[0]}", self._array(tensor), node, tensor)
            else:
                self._identity_constant(tensor, identity, node)

    def _read_direct_parameters(self) -> None:
        """Weights a module uses without an op of its own (Snake's ``alpha``), by their initializer names."""
        for name, tensor in self._initializers.items():
            key = _torch_name(name)
            if key in self._expected and key not in self._values and tensor.data_type == 1:
                self._values[key] = (self._array(name), f"initializer {name}")

    # --- following the graph around an integer op ---

    def _rescaling(self, node: onnx.NodeProto) -> tuple[str, str, str | None]:
        """(the float output, the weight's scale initializer, a ConvInteger's float bias initializer).

        An integer op's int32 output (plus, for a conv with a bias, the bias quantized at run time) is cast
        to float and multiplied by the activation's dynamic scale times the weight's constant scale.
        """
        tensor, bias = node.output[0], None
        step = self._only_consumer(tensor)
        if step.op_type == "Add":
            bias = self._float_bias_behind(next(name for name in step.input if name != tensor), node)
            tensor = step.output[0]
            step = self._only_consumer(tensor)
        if step.op_type != "Cast":
            raise ConversionError(f"{node.name}: its output goes to {step.op_type}, not a Cast to float")
        rescale = self._only_consumer(step.output[0], "Mul")
        scales = next(name for name in rescale.input if name != step.output[0])
        product = self._producer.get(scales)
        constant = [name for name in (product.input if product else ()) if name in self._initializers]
        if product is None or product.op_type != "Mul" or len(constant) != 1:
            raise ConversionError(f"{node.name}: no activation scale x weight scale Mul behind its rescaling")
        return rescale.output[0], constant[0], bias

    def _float_bias_behind(self, tensor: str, node: onnx.NodeProto) -> str:
        """The float bias a conv's int32 bias is computed from (Div by the scale, Floor, Cast, Reshape)."""
        for _ in range(8):
            step = self._producer.get(tensor)
            if step is None:
                break
            if step.op_type == "Div" and step.input[0] in self._initializers:
                return step.input[0]
            if step.op_type not in ("Reshape", "Cast", "Floor", "Round"):
                break
            tensor = step.input[0]
        raise ConversionError(f"{node.name}: its int32 bias is not a float initializer divided by a scale")

    def _bias_after(self, tensor: str, width: int) -> str | None:
        """A Linear's bias: the initializer of the Add (or FastGelu, which adds it first) right after it."""
        consumers = self._consumers.get(tensor, [])
        if len(consumers) != 1 or consumers[0].op_type not in ("Add", "FastGelu"):
            return None
        step = consumers[0]
        candidates = step.input[1:2] if step.op_type == "FastGelu" else step.input
        found = [
            n for n in candidates if n in self._initializers and tuple(self._initializers[n].dims) == (width,)
        ]
        return found[0] if found else None

    def _only_consumer(self, tensor: str, op_type: str | None = None) -> onnx.NodeProto:
        consumers = self._consumers.get(tensor, [])
        if len(consumers) != 1 or (op_type is not None and consumers[0].op_type != op_type):
            found = ", ".join(c.op_type for c in consumers) or "nothing"
            raise ConversionError(f"{tensor}: expected one {op_type or 'consumer'}, found {found}")
        return consumers[0]

    # --- values ---

    def _array(self, name: str) -> Array:
        self._read.add(name)
        return np.asarray(self._to_array(self._initializers[name]), dtype=np.float32)

    def _dequantize(self, weight: str, zero_point: str, scale: str, *, axes: tuple[int, ...]) -> Array:
        """``(q - zero_point) * scale`` in float32: the value the int8 model multiplies by (``q - zero_point``
        is exact in float32). Scale and zero point are scalars or vary along ``axes`` (:func:`_broadcast`)."""
        self._read.add(weight)
        quantized = self._to_array(self._initializers[weight]).astype(np.float32)
        scales = self._array(scale)
        offsets = self._array(zero_point) if zero_point else np.zeros((), dtype=np.float32)
        return (quantized - _broadcast(offsets, quantized, axes)) * _broadcast(scales, quantized, axes)

    def _identity_constant(self, name: str, expected: float, node: onnx.NodeProto) -> None:
        """An export constant that stands for "no parameter here": it must be all ``expected``."""
        if not np.all(self._array(name) == expected):
            raise ConversionError(
                f"{_scope(node)}: {name} is not all {expected}, but the module has no weight"
            )

    def _module(self, node: onnx.NodeProto) -> str:
        """The ``KModel`` module ``node`` ran in (see :func:`module_path`)."""
        path = module_path(_scope(node))
        for candidate in (path, f"predictor.{path}"):  # F0Ntrain's modules ran outside predictor's scope
            if candidate in self._kmodel.modules:
                return candidate
        raise ConversionError(f"{_scope(node)}: {node.op_type} in {path!r}, which no KModel module holds")

    def _put(self, key: str, value: Array, node: onnx.NodeProto, initializer: str | None) -> None:
        """Record ``key``; a module run again must bring the same value, and an initializer named after a
        parameter must be named after this one."""
        if initializer is not None:
            named = _torch_name(initializer)
            if named in self._expected and named != key:
                raise ConversionError(f"{_scope(node)}: {initializer} reads as {named}, traced as {key}")
        origin = _scope(node)
        if key in self._values:
            previous, first = self._values[key]
            if previous.shape != value.shape or not np.array_equal(previous, value):
                raise ConversionError(f"{key}: {first} and {origin} hold different values")
            return
        self._values[key] = (value, origin)

    def _split_weight_norms(self, values: dict[str, Array]) -> dict[str, Array]:
        """``W`` of a weight_norm'd module -> ``weight_v = W``, ``weight_g = ||W||`` per output channel.

        The norm is taken in float64 and rounded once, so it does not depend on a CPU's summation order;
        an all-zero channel gets ``v = 1`` and ``g = 0`` (torch would compute 0/0 for ``v = 0``).
        """
        split: dict[str, Array] = {}
        for key, value in values.items():
            module, _, name = key.rpartition(".")
            if name != "weight" or f"{module}.weight_v" not in self._expected:
                split[key] = value
                continue
            norms = np.sqrt(
                np.sum(value.astype(np.float64) ** 2, axis=tuple(range(1, value.ndim)), keepdims=True)
            )
            split[f"{module}.weight_g"] = norms.astype(np.float32)
            split[f"{module}.weight_v"] = np.where(norms == 0.0, np.float32(1.0), value).astype(np.float32)
        return split

    def _fill_absent(self, values: dict[str, Array]) -> None:
        """The weights the export has no trace of, by design (see the module's docstring)."""
        for key, shape in self._expected.items():
            if key in values:
                continue
            module, _, name = key.rpartition(".")
            if module in self._kmodel.instance_norms and name in ("weight", "bias"):
                values[key] = np.full(shape, 1.0 if name == "weight" else 0.0, dtype=np.float32)
            elif module == "bert.pooler":
                values[key] = np.zeros(shape, dtype=np.float32)

    def _check(self, values: Mapping[str, Array]) -> None:
        """Each expected weight there with its shape, nothing else, and every parameter of the export read."""
        problems = list(self._problems)
        problems += [f"{key}: not in the export" for key in self._expected if key not in values]
        problems += [f"{key}: no such KModel weight" for key in values if key not in self._expected]
        problems += [
            f"{key}: shape {tuple(value.shape)}, KModel has {self._expected[key]}"
            for key, value in values.items()
            if key in self._expected and tuple(value.shape) != self._expected[key]
        ]
        problems += [f"{name}: an initializer of the export nothing placed" for name in self._unread()]
        if problems:
            raise ConversionError(
                f"the ONNX export does not map onto KModel ({len(problems)} problems):\n  "
                + "\n  ".join(problems)
            )

    def _unread(self) -> Iterable[str]:
        """Initializers that hold parameters (named after one, or a quantized weight) and were not read."""
        for name, tensor in self._initializers.items():
            if name in self._read or tensor.data_type not in _FLOAT_TYPES:
                continue
            if _torch_name(name) is not None or name.endswith(_QUANTIZED_SUFFIX) or name.startswith("onnx::"):
                yield name


def _scope(node: onnx.NodeProto) -> str:
    """A node's scope name; fused nodes (``SkipLayerNormalization_token_7``) keep it only in their output."""
    return node.name if node.name.startswith("/") else node.output[0]


def _input(node: onnx.NodeProto, index: int) -> str:
    """The name of an optional input ('' when absent)."""
    return node.input[index] if index < len(node.input) else ""


def _attributes(node: onnx.NodeProto) -> dict[str, Any]:
    from onnx import helper

    return {attribute.name: _text(helper.get_attribute_value(attribute)) for attribute in node.attribute}


def _text(value: object) -> object:
    return value.decode() if isinstance(value, bytes) else value


def _torch_name(initializer: str) -> str | None:
    """``decoder.decoder.generator.ups.0.bias`` -> ``decoder.generator.ups.0.bias``: the state-dict name an
    initializer carries (``_quantized`` dropped), or None for the export's own names."""
    for prefix in _WRAPPER_PREFIXES:
        if initializer.startswith(prefix):
            return initializer.removeprefix(prefix).removesuffix(_QUANTIZED_SUFFIX)
    return None


def _broadcast(values: Array, target: npt.NDArray[Any], axes: tuple[int, ...]) -> Array:
    """A scale or zero point shaped to broadcast over ``target``: a scalar, or one value per index of
    ``axes`` (a conv's output channels ``(0,)``, a MatMul's columns ``(1,)``, an LSTM's directions and
    gates ``(0, 2)``), or of its first axis alone (an LSTM's per-direction scale)."""
    if values.size == 1:
        return values.reshape(())
    for chosen in (axes, axes[:1]):
        if chosen and values.shape == tuple(target.shape[axis] for axis in chosen):
            return values.reshape([target.shape[a] if a in chosen else 1 for a in range(target.ndim)])
    raise ConversionError(f"a scale or zero point of shape {values.shape} for a weight of {target.shape}")


def _torch_gates(weights: Array) -> Array:
    """ONNX's gate blocks (i, o, f, c) along axis 0 -> torch's (i, f, g, o)."""
    i, o, f, c = np.split(weights, 4, axis=0)
    return np.concatenate([i, f, c, o], axis=0)
