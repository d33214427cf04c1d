"""Pick and load the engine the server runs: ``onnx`` (CPU), ``torch`` (GPU), or ``auto``.

``auto`` means torch when CUDA is available, else onnx: on a GPU the fp32 torch model is both faster
and closer to the reference; on CPU the int8 ONNX export is several times faster than torch. Engines
are imported lazily so an onnx-only install never imports torch for nothing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal, get_args

from tts_container.engines.base import Engine
from tts_container.engines.torch_free import cuda_device_present

EngineName = Literal["onnx", "torch", "auto"]
ENGINE_NAMES: tuple[str, ...] = get_args(EngineName)


def cuda_available() -> bool:
    """True when torch is installed and sees a CUDA device (false, not an error, without torch).

    Without a device the driver reports, torch is not imported at all
    (:mod:`~tts_container.engines.torch_free`).
    """
    if importlib.util.find_spec("torch") is None or cuda_device_present() is False:
        return False
    import torch

    return bool(torch.cuda.is_available())


def resolve_engine_name(name: str) -> Literal["onnx", "torch"]:
    """Map ``auto`` to a concrete engine; reject unknown names with the list of valid ones."""
    if name == "auto":
        return "torch" if cuda_available() else "onnx"
    if name == "onnx":
        return "onnx"
    if name == "torch":
        return "torch"
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINE_NAMES)}")


def load_engine(
    name: EngineName = "auto",
    threads: int | None = None,
    cache_dir: Path | str | None = None,
    *,
    max_batch: int | None = None,
) -> Engine:
    """Provision weights into ``cache_dir`` if needed and return a loaded, warmed-up engine (its vocoder
    timed, and the default voice's statistics ready if it renders in windows).

    ``threads`` bounds the CPU threads of one inference call (onnxruntime intra-op threads; torch's
    ``set_num_threads`` on CPU). ``cache_dir`` defaults to ``$STRANDS_KOKORO_CACHE`` or
    ``~/.cache/strands-kokoro``. ``max_batch``: the torch engine's calls per forward pass at most
    (default: 32 on CUDA, 1 on a CPU); the onnx engine renders each call alone and ignores it.
    """
    concrete = resolve_engine_name(name)
    if concrete == "onnx":
        from tts_container.engines.onnx_engine import OnnxEngine

        onnx_engine = OnnxEngine.from_cache(cache_dir, threads=threads)
        onnx_engine.warm_up()
        return onnx_engine
    from tts_container.engines.torch_engine import TorchEngine

    device = "cuda" if cuda_available() else "cpu"
    torch_engine = TorchEngine.from_cache(cache_dir, device=device, threads=threads, max_batch=max_batch)
    torch_engine.warm_up()
    return torch_engine
