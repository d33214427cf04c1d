"""The onnx engine's process runs without torch (tts_container.engines.torch_free), and reads the same."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.model_server_process import RunningServer
from tts_container.engines.torch_free import cuda_device_present
from tts_container.text.g2p import Phonemizer

SENTENCES = (
    "I read 25 books in Paris last year, and I will read them again.",
    "The lead singer led the band; the wind wound round the old mill.",
)
HAS_TORCH = importlib.util.find_spec("torch") is not None

# Run in a process of its own: the test process may have imported torch or spaCy already.
_HIDDEN = """
import json, sys
from tts_container.engines.torch_free import import_spacy_without_torch
import_spacy_without_torch()
from tts_container.text.g2p import Phonemizer
import thinc.compat
phonemizer = Phonemizer()
texts = json.loads(sys.argv[1])
report = {
    "phonemes": [phonemizer.phonemes(text).text for text in texts],
    "torch_imported": "torch" in sys.modules,
    "thinc_has_torch": thinc.compat.has_torch,
}
import importlib.util
if importlib.util.find_spec("torch") is not None:
    import torch
    report["torch_after"] = bool(torch.tensor([1.0]).sum().item() == 1.0)
print(json.dumps(report))
"""


def test_spacy_without_torch_reads_the_same_and_torch_still_imports_after() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _HIDDEN, json.dumps(SENTENCES)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["torch_imported"] is False
    assert report["thinc_has_torch"] is False
    assert report["phonemes"] == [Phonemizer().phonemes(text).text for text in SENTENCES]
    if HAS_TORCH:
        assert report["torch_after"] is True


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_no_cuda_device_from_the_driver_means_none_for_torch() -> None:
    import torch

    if cuda_device_present() is False:
        assert not torch.cuda.is_available()
    elif cuda_device_present() is True:
        assert torch.cuda.device_count() > 0 or not torch.backends.cuda.is_built()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_onnx_model_server_maps_no_torch(model_server: RunningServer) -> None:
    maps = Path(f"/proc/{model_server.process.pid}/maps").read_text()
    assert "libtorch" not in maps
    assert "libonnxruntime" in maps or "onnxruntime" in maps
