"""Keeping torch out of a process whose engine does not run it.

The container installs torch for the GPU engine, and importing it maps ~450 MB that the onnx engine
never uses. Two imports would bring it in anyway: asking torch whether CUDA is there (the ``auto``
engine choice), and spaCy, whose thinc imports torch whenever it is installed (misaki tags English with
a spaCy pipeline that runs on numpy alone). :func:`cuda_device_present` asks the NVIDIA driver instead,
and :func:`import_spacy_without_torch` imports spaCy with torch hidden from it.
"""

from __future__ import annotations

import ctypes
import importlib
import sys

_CUDA_SUCCESS = 0


def cuda_device_present() -> bool | None:
    """Whether the NVIDIA driver sees a CUDA device, asked through its ``libcuda`` (no torch import).

    False on Linux without the driver library or a device; None elsewhere (the driver's library has
    other names there: ask torch).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    if driver.cuInit(0) != _CUDA_SUCCESS or driver.cuDeviceGetCount(ctypes.byref(count)) != _CUDA_SUCCESS:
        return False
    return count.value > 0


def import_spacy_without_torch() -> None:
    """Import spaCy (and thinc under it) with torch hidden, so thinc sets itself up without it.

    Does nothing when spaCy or torch is imported already (a process that runs the torch engine, or a
    test process that ran it): hiding a loaded module would change nothing and could confuse its users.
    A later ``import torch`` (the torch engine in the same process) works as usual.
    """
    if "spacy" in sys.modules or "torch" in sys.modules:
        return
    sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError meanwhile
    try:
        importlib.import_module("spacy")
    finally:
        del sys.modules["torch"]
