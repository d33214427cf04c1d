"""The torch engine on real Kokoro weights, offline: the checkpoint derived from the int8 export.

The cache is filled the production way: its one source is a directory with the onnx part alone, so
provisioning copies that and derives the torch part
(:class:`tts_container.weights.sources.OnnxDerivedSource`), and ``TorchEngine.from_cache`` loads it on
the CPU. On held-out sentences (:data:`benchmarks.torch_converted.HELD_OUT`, which no other test or
calibration text speaks) it is measured against the onnx engine on the same export:

- durations, token by token on the same phonemes: the weights are the same, but the torch model computes
  in float where onnxruntime rounds activations to 8 bits, so a token whose duration lies near half a
  frame can round the other way: every token within one frame, and at most 10% of them off by one
  (measured: 10 of 450, 2.2%);
- Whisper hears the text (WER at most 0.10, as ``test_asr`` asks of the onnx engine; measured: 0.014,
  one "a" unheard);
- the log-mel distance from the onnx engine's audio (:mod:`benchmarks.log_mel`: DTW-aligned, the level
  difference apart) stays under 3 dB (measured: 1.9 dB on average, 2.3 at most); the torch audio is
  about 3.2 dB quieter, the export's own iSTFT being 1.5x (3.5 dB) louder than kokoro's
  (``test_weights_conversion``).

``python -m benchmarks.torch_converted`` prints the same figures (and DNSMOS) for the record.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from benchmarks.log_mel import log_mel_distance
from benchmarks.speech_check import edit_distance, transcribe, words
from benchmarks.torch_converted import HELD_OUT, pcm16, whole
from tts_container.engines.base import NATIVE_SAMPLE_RATE
from tts_container.text.g2p import Phonemizer, split_phonemes
from tts_container.weights.cache import MANIFEST_FILE, ONNX_FILE, PART_FILES, TORCH_FILE, read_manifest
from tts_container.weights.provisioning import ensure_weights
from tts_container.weights.sources import DirectorySource

if TYPE_CHECKING:
    from tts_container.engines.onnx_engine import OnnxEngine
    from tts_container.engines.torch_engine import TorchEngine

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("kokoro") is None or importlib.util.find_spec("onnx") is None,
        reason="needs the torch extra (kokoro) and the onnx extra",
    ),
]

MAX_WER = 0.1
MAX_DIFFERING_DURATIONS = 0.10
MAX_MEL_DISTANCE_DB = 3.0
EXPORT_ISTFT_LEVEL_DB = 20 * math.log10(1.5)


@pytest.fixture(scope="module")
def derived_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh cache whose torch part provisioning derives: its only source, a model directory holding
    the default cache's onnx part (linked), has no checkpoint."""
    filled = ensure_weights(part="onnx")  # the default cache, as the onnx engine tests use it
    model_dir = tmp_path_factory.mktemp("onnx-part")
    for name in (*PART_FILES["onnx"], MANIFEST_FILE):
        (model_dir / name).symlink_to(filled.root / name)
    cache = tmp_path_factory.mktemp("derived-cache")
    ensure_weights(cache, part="torch", sources=[DirectorySource(model_dir)])
    return cache


@pytest.fixture(scope="module")
def torch_engine(derived_cache: Path) -> TorchEngine:
    from tts_container.engines.torch_engine import TorchEngine

    return TorchEngine.from_cache(derived_cache, device="cpu", threads=2)


@pytest.fixture(scope="module")
def onnx_engine() -> OnnxEngine:
    from tts_container.engines.onnx_engine import OnnxEngine

    return OnnxEngine.from_cache(threads=2)


def test_the_engine_runs_a_checkpoint_derived_from_the_cache_s_own_export(
    torch_engine: TorchEngine, derived_cache: Path
) -> None:
    assert torch_engine.model.device.type == "cpu"
    manifest = read_manifest(derived_cache)
    onnx_sha256 = str(manifest[ONNX_FILE]["sha256"])
    assert manifest[TORCH_FILE]["source"] == f"derived from {ONNX_FILE} {onnx_sha256[:16]}"
    assert manifest[TORCH_FILE]["derived_from"] == {ONNX_FILE: onnx_sha256}


@pytest.mark.timeout(600)
def test_durations_match_the_onnx_engine_on_the_same_phonemes(
    torch_engine: TorchEngine, onnx_engine: OnnxEngine
) -> None:
    phonemizer = Phonemizer()
    tokens = differing = 0
    for voice, sentence in HELD_OUT:
        for segment in split_phonemes(phonemizer.phonemize(sentence, lang="en-us", voice=voice)):
            ours = torch_engine.prosody(segment, voice=voice, speed=1.0).durations
            theirs = onnx_engine.prosody(segment, voice=voice, speed=1.0).durations
            assert len(ours) == len(theirs)
            assert all(abs(a - b) <= 1 for a, b in zip(ours, theirs, strict=True)), (sentence, ours, theirs)
            tokens += len(ours)
            differing += sum(a != b for a, b in zip(ours, theirs, strict=True))
    print(f"\ndurations: {differing} of {tokens} tokens one frame apart ({differing / tokens:.1%})")
    assert differing / tokens <= MAX_DIFFERING_DURATIONS


@pytest.mark.timeout(900)
def test_whisper_hears_the_text_and_it_sounds_like_the_onnx_engine(
    torch_engine: TorchEngine, onnx_engine: OnnxEngine
) -> None:
    errors = total = 0
    report, distances, levels = [], [], []
    for voice, sentence in HELD_OUT:
        ours = whole(torch_engine.segments(sentence, voice=voice, speed=1.0, lang="en-us"))
        theirs = whole(onnx_engine.segments(sentence, voice=voice, speed=1.0, lang="en-us"))
        heard = transcribe(pcm16(ours), NATIVE_SAMPLE_RATE)
        distance = edit_distance(words(sentence), words(heard))
        errors += distance
        total += len(words(sentence))
        mel = log_mel_distance(ours, theirs)
        distances.append(mel.distance_db)
        levels.append(mel.level_db)
        report.append(f"{voice:10s} {distance} mel {mel.distance_db:.2f} dB | {sentence} | {heard}")
    wer = errors / total
    mean_distance = sum(distances) / len(distances)
    print(
        f"\nWER {wer:.3f} ({total} words), log-mel distance {mean_distance:.2f} dB (max {max(distances):.2f})"
    )
    print("\n".join(report))
    assert wer <= MAX_WER, "\n".join(report)
    assert max(distances) <= MAX_MEL_DISTANCE_DB, "\n".join(report)
    assert all(abs(level + EXPORT_ISTFT_LEVEL_DB) < 1.0 for level in levels), levels
