"""The GPU engine: hexgrad's ``kokoro`` (``KModel``, fp32) on torch; the ``auto`` default when CUDA is there.

Why ``KModel`` and not ``KPipeline``: the pipeline brings its own misaki G2P (whose constructor downloads
a spaCy model when the name ``en_core_web_sm`` is not installed, see :mod:`tts_container.g2p`), its own
chunking, and voices fetched from the hub by name. We need none of that: phonemes come from the shared
:class:`~tts_container.g2p.Phonemizer` and :func:`~tts_container.g2p.split_phonemes`, so this engine and
the onnx one say the same sounds and cut segments at the same places, and voices come from the shared
cache's ``voices.npz``. What is left of the pipeline is one line (pick the style row, call the model).

Expected cache files (see :mod:`tts_container.weights`; real ones come from the hub ``hexgrad/Kokoro-82M``
or an ``s3://`` model cache, no registry here carries the fp32 checkpoint)::

    config.json       vocab + hyper-parameters of Kokoro-82M
    kokoro-v1_0.pth   torch.save({"bert": ..., "bert_encoder": ..., "predictor": ..., "text_encoder": ...,
                      "decoder": ...}) with each component's state dict (keys may carry DataParallel's
                      ``module.`` prefix, as the hub file does)
    voices.npz        float32 style tables (510, 1, 256) keyed by voice name

Importing this module imports ``kokoro``, which imports ``misaki.en`` and therefore spaCy, transformers
and huggingface_hub; none of them touches the network at import. ``KModel`` downloads only when its
``config`` or ``model`` argument is missing, and :func:`load_kmodel` always passes both.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator, Mapping
from pathlib import Path

import numpy as np
import torch
from kokoro import KModel

from tts_container.engines.base import Audio, Segment
from tts_container.engines.voices import DEFAULT_VOICE, UnknownVoice, VoiceTables
from tts_container.g2p import MAX_SEGMENT_TOKENS, Phonemes, Phonemizer
from tts_container.provisioning import ensure_weights
from tts_container.weights import CachedWeights

# KModel uses the repo id only to name hub files; passing it explicitly silences its stdout warning.
REPO_ID = "hexgrad/Kokoro-82M"
# The components kokoro-v1_0.pth holds, each an attribute of KModel.
COMPONENTS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
DATA_PARALLEL_PREFIX = "module."


class CheckpointMismatch(RuntimeError):
    """The checkpoint does not fill every weight of the model built from ``config.json``.

    ``KModel`` loads a component whose keys do not match with ``strict=False``, which silently keeps
    random weights for whatever is missing: the server would then speak noise. We refuse to start instead.
    """


def pick_device(device: str | None = None) -> torch.device:
    """``device`` if given, else CUDA when available, else CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_kmodel(config_path: Path, model_path: Path, device: torch.device) -> KModel:
    """Build ``KModel`` from local files only, check every weight was loaded, move it to ``device``."""
    with warnings.catch_warnings():
        # Known, harmless noise from kokoro 0.9.4's module definitions (one-layer LSTM with dropout,
        # the deprecated weight_norm API); an operator reading the start-up log needs neither.
        warnings.filterwarnings("ignore", message="dropout option adds dropout", category=UserWarning)
        warnings.filterwarnings("ignore", message=".*weight_norm.* is deprecated", category=FutureWarning)
        model = KModel(repo_id=REPO_ID, config=str(config_path), model=str(model_path))
    check_checkpoint_complete(model, model_path)
    return model.to(device).eval()


def check_checkpoint_complete(model: torch.nn.Module, model_path: Path) -> None:
    """Raise :class:`CheckpointMismatch` unless the checkpoint's keys are exactly the model's.

    Shapes need no check here: ``load_state_dict`` raises on a shape mismatch even when not strict.
    The second read of the file costs about a second at start-up, once.
    """
    checkpoint = torch.load(model_path, map_location="cpu", weights_only=True)
    problems = []
    for component in COMPONENTS:
        expected = set(getattr(model, component).state_dict())
        if component not in checkpoint:
            problems.append(f"{component}: absent")
            continue
        present = {key.removeprefix(DATA_PARALLEL_PREFIX) for key in checkpoint[component]}
        if missing := sorted(expected - present):
            problems.append(f"{component}: {len(missing)} weights missing (e.g. {missing[0]})")
        if unexpected := sorted(present - expected):
            problems.append(f"{component}: {len(unexpected)} unexpected weights (e.g. {unexpected[0]})")
    if problems:
        raise CheckpointMismatch(f"{model_path} does not match its config: {'; '.join(problems)}")


class TorchEngine:
    """Kokoro's fp32 ``KModel`` on CUDA or CPU; one instance is shared by every session of the server."""

    name = "torch"

    def __init__(
        self, model: KModel, voice_tables: VoiceTables, *, phonemizer: Phonemizer | None = None
    ) -> None:
        self._model = model
        self._vocab: Mapping[str, int] = model.vocab
        self._voice_tables = voice_tables
        self._phonemizer = phonemizer or Phonemizer()

    @classmethod
    def from_cache(
        cls,
        cache_dir: Path | str | None = None,
        *,
        device: str | None = None,
        threads: int | None = None,
    ) -> TorchEngine:
        """Provision the torch part of the cache if needed (see :mod:`tts_container.weights`) and load it.

        ``threads`` sets torch's intra-op CPU threads; that setting is process-wide in torch, which is
        fine because the server runs one engine per process.
        """
        weights: CachedWeights = ensure_weights(cache_dir, part="torch")
        if threads:
            torch.set_num_threads(threads)
        model = load_kmodel(weights.config, weights.torch_model, pick_device(device))
        return cls(model, VoiceTables.load(weights.voices))

    @property
    def model(self) -> KModel:
        """The loaded ``KModel`` (its ``.device`` says where it runs); for benchmarks and tests."""
        return self._model

    @property
    def voices(self) -> frozenset[str]:
        return self._voice_tables.names

    def segments(self, text: str, *, voice: str, speed: float, lang: str) -> Generator[Segment]:
        """Check the voice and phonemize now, then synthesize one segment per ``next()``.

        Not a generator itself: an unknown voice or language raises at the call (which the server makes
        from its pool), not at the first ``next()``; the returned iterator does the model work lazily,
        so a ``cancel`` lands between segments.
        """
        if voice not in self._voice_tables.names:
            raise UnknownVoice(f"unknown voice {voice!r}")
        phonemes = self._phonemizer.phonemes(text, lang=lang, voice=voice)
        return self._synthesize_each(phonemes.split(), voice=voice, speed=speed)

    def _synthesize_each(self, segments: list[Phonemes], *, voice: str, speed: float) -> Generator[Segment]:
        for segment in segments:
            audio, durations = self.synthesize_timed(segment.text, voice=voice, speed=speed)
            if audio.size:
                yield Segment(audio, segment.word_timings(durations, self._vocab))

    def count_tokens(self, phonemes: str) -> int:
        """Phoneme symbols the model knows (the others are dropped by ``KModel``, as by the onnx engine)."""
        return sum(symbol in self._vocab for symbol in phonemes)

    def synthesize_phonemes(self, phonemes: str, *, voice: str, speed: float) -> Audio:
        """Audio for one segment of at most 510 tokens, as mono float32 at 24 kHz on the host."""
        return self.synthesize_timed(phonemes, voice=voice, speed=speed)[0]

    def synthesize_timed(self, phonemes: str, *, voice: str, speed: float) -> tuple[Audio, list[int]]:
        """Audio and ``KModel``'s predicted duration of every token in frames (pads included)."""
        n_tokens = self.count_tokens(phonemes)
        if not n_tokens:
            return np.zeros(0, dtype=np.float32), []
        if n_tokens > MAX_SEGMENT_TOKENS:
            raise ValueError(
                f"segment of {n_tokens} tokens exceeds Kokoro's {MAX_SEGMENT_TOKENS}-token context"
            )
        # The same style row as the onnx engine picks (row n_tokens - 1, see VoiceTables.style).
        style = torch.from_numpy(self._voice_tables.style(voice, n_tokens))
        with torch.inference_mode():
            output = self._model(phonemes, style, speed, return_output=True)
            audio = output.audio.reshape(-1).to(device="cpu", dtype=torch.float32).numpy()
            durations = [] if output.pred_dur is None else [int(d) for d in output.pred_dur.reshape(-1)]
            return audio, durations

    def warm_up(self) -> None:
        """Run G2P and the model once (CUDA kernels, cuDNN autotuning) before the first real request."""
        voice = DEFAULT_VOICE if DEFAULT_VOICE in self.voices else min(self.voices)
        for _ in self.segments("Ready.", voice=voice, speed=1.0, lang="en-us"):
            pass
