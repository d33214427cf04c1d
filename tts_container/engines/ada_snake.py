"""The AdaSnake operator: each AdaIN norm of the vocoder and the snake after it as one onnxruntime kernel.

``native/ada_snake.c`` does in one pass what the graph does in seven elementwise nodes, and registers
as ``ai.strands_kokoro.AdaSnake``; :func:`operator_library` compiles it on this machine (once, cached
under a hash of what it is built from), with onnxruntime's C API headers taken from a pinned registry
wheel; :func:`fuse_snakes` rewrites a vocoder graph to call it. Where the library cannot be had,
:class:`OperatorUnavailable` says why. Why and how: docs/architecture.md, "The AdaSnake operator".
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx
from onnx import helper

from tts_container.engines.onnx_graphs import consumers, drop_dead

logger = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("native") / "ada_snake.c"
NATIVE_DIR = "native"  # the weight cache's folder of compiled operators (the library and its headers)
DOMAIN = "ai.strands_kokoro"
OP_TYPE = "AdaSnake"
# onnxruntime's C API header and the one it includes, each pinned by sha256, and where they are found.
HEADERS_SHA256 = {
    "onnxruntime_c_api.h": "71125e66180a991d65c9bdbad4aa20daaa1f7a48c7a5c0fa5f18f250ac839a02",
    "onnxruntime_ep_c_api.h": "b92778f50c36ecdf53d0344e0129a78b306afed653f81bba8a9597e3e6e9546f",
}
HEADER_PACKAGE = "kokoro-pi==1.2.0"
HEADERS_IN_PACKAGE = "kokoro_pi/_bundled/native/include"
COMPILE_FLAGS = ("-O3", "-std=c11", "-shared", "-fPIC")
TOOL_TIMEOUT_S = 180


class OperatorUnavailable(RuntimeError):
    """The library cannot be had on this machine (no compiler, no headers, a failed build)."""


def operator_library(folder: Path) -> Path:
    """The compiled library in ``folder``: the cached one, or built now (a second or two; the headers are
    fetched once). Raises :class:`OperatorUnavailable`."""
    compiler = os.environ.get("CC") or shutil.which("cc")
    if not compiler:
        raise OperatorUnavailable("no C compiler (set CC or install cc)")
    version = next(iter(_run([compiler, "--version"], "the C compiler").splitlines()), compiler)
    include = _headers(folder / "include")
    source = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    machine = (platform.machine(), platform.system())
    built_from = (source, *HEADERS_SHA256.values(), version, *COMPILE_FLAGS, *machine)
    key = hashlib.sha256("\n".join(built_from).encode()).hexdigest()[:16]
    library = folder / f"ada-snake-{key}.so"
    if library.exists():
        return library
    staged = folder / f".{library.name}.{os.getpid()}"
    command = [compiler, *COMPILE_FLAGS, "-I", str(include), str(SOURCE), "-o", str(staged)]
    _run(command, "compiling the AdaSnake operator")
    try:
        os.replace(staged, library)
    except OSError as exc:
        raise OperatorUnavailable(f"keeping the library in {folder}: {exc}") from exc
    logger.info("built the AdaSnake operator: %s", library)
    return library


def _headers(folder: Path) -> Path:
    """``folder`` holding onnxruntime's C API headers, taken from :data:`HEADER_PACKAGE` when they are not
    there."""
    if all(_sha256(folder / name) == digest for name, digest in HEADERS_SHA256.items()):
        return folder
    uv = shutil.which("uv")
    if uv is None:
        raise OperatorUnavailable(f"onnxruntime's C API headers are not in {folder} and no uv fetches them")
    with tempfile.TemporaryDirectory(prefix="kokoro-headers-") as scratch:
        command = [uv, "pip", "install", "--quiet", "--no-deps", "--target", scratch]
        _run([*command, "--python", sys.executable, HEADER_PACKAGE], f"fetching {HEADER_PACKAGE}")
        fetched = Path(scratch) / HEADERS_IN_PACKAGE
        for name, digest in HEADERS_SHA256.items():
            if _sha256(fetched / name) != digest:
                raise OperatorUnavailable(f"{HEADER_PACKAGE} has no {name} with sha256 {digest}")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for name in HEADERS_SHA256:
                staged = folder / f".{name}.{os.getpid()}"
                shutil.copyfile(fetched / name, staged)
                os.replace(staged, folder / name)
        except OSError as exc:
            raise OperatorUnavailable(f"keeping the headers in {folder}: {exc}") from exc
    return folder


def _run(command: list[str], what: str) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OperatorUnavailable(f"{what}: {exc}") from exc
    if done.returncode != 0:
        raise OperatorUnavailable(f"{what} failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return done.stdout


def _sha256(path: Path) -> str | None:
    """The file's sha256, or None where it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def fuse_snakes(vocoder: bytes) -> tuple[bytes, int]:
    """``vocoder`` with each AdaIN norm and the snake after it replaced by one :data:`OP_TYPE` node, and
    how many were replaced.

    The chain replaced: ``Div(Sub(x, mean), deviation)``, then ``Add(Mul(gain, ·), bias)`` = h, then
    ``Add(h, Mul(1/alpha, Pow(Sin(Mul(alpha, h)), 2)))``; every intermediate after the norm read by the
    chain alone.
    """
    model = onnx.load_from_string(vocoder)
    graph = model.graph
    producer = {output: node for node in graph.node for output in node.output}
    readers = consumers(graph)
    constants = {init.name for init in graph.initializer}

    def made_by(name: str, op_type: str) -> onnx.NodeProto | None:
        node = producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    def only_reader(name: str, op_type: str) -> onnx.NodeProto | None:
        users = readers.get(name, [])
        return users[0] if len(users) == 1 and users[0].op_type == op_type else None

    fused: dict[int, onnx.NodeProto] = {}
    dropped: set[int] = set()
    for sine in (node for node in graph.node if node.op_type == "Sin"):
        scale = made_by(sine.input[0], "Mul")
        alpha = next((name for name in scale.input if name in constants), None) if scale else None
        square = only_reader(sine.output[0], "Pow")
        weigh = only_reader(square.output[0], "Mul") if square else None
        residual = only_reader(weigh.output[0], "Add") if weigh else None
        if scale is None or alpha is None or residual is None:
            continue
        h = next(name for name in scale.input if name != alpha)
        shift = made_by(h, "Add")
        if shift is None or h not in residual.input or len(readers[h]) != 2:
            continue
        affine = next(filter(None, (made_by(name, "Mul") for name in shift.input)), None)
        if affine is None:
            continue
        normalized = next(filter(None, (made_by(name, "Div") for name in affine.input)), None)
        centred = made_by(normalized.input[0], "Sub") if normalized else None
        if normalized is None or centred is None:
            continue
        if len(readers[affine.output[0]]) != 1:
            continue
        gain = next(name for name in affine.input if name != normalized.output[0])
        bias = next(name for name in shift.input if name != affine.output[0])
        x, mean = centred.input
        inputs = [x, mean, normalized.input[1], gain, bias, alpha]
        fused[id(residual)] = helper.make_node(
            OP_TYPE, inputs, [residual.output[0]], name=f"{residual.name}/{OP_TYPE}", domain=DOMAIN
        )
        # The norm itself may be shared (the three resblocks of a stage normalize the same input): it is
        # dropped below once nothing reads it.
        dropped.update(id(node) for node in (affine, shift, scale, sine, square, weigh))
    nodes = [fused.get(id(node), node) for node in graph.node if id(node) not in dropped]
    del graph.node[:]
    graph.node.extend(nodes)
    model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    drop_dead(graph)
    return model.SerializeToString(), len(fused)
