"""The GPU engine: hexgrad's ``kokoro`` (``KModel``, fp32) on torch; the ``auto`` default when CUDA is there.

``KModel``, not ``KPipeline``: phonemes come from the shared :class:`~tts_container.text.g2p.Phonemizer`
and :func:`~tts_container.text.g2p.split_phonemes` (so both engines say the same sounds and cut at the
same places), voices from the cache's ``voices.npz``; the pipeline's own G2P would download a spaCy model.
It loads ``config.json`` and ``kokoro-v1_0.pth`` (each component's state dict, DataParallel's ``module.``
prefix allowed) from the cache (:mod:`tts_container.weights.cache`). Importing it imports spaCy and
transformers, none of which touches the network; :func:`load_kmodel` always passes ``config`` and ``model``,
so ``KModel`` never downloads.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Container, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from kokoro import KModel

from strands_kokoro.protocol import DEFAULT_LANG, DEFAULT_VOICE
from tts_container.engines.base import NO_CONTEXT, Audio, BatchCounts, Context, Segment
from tts_container.engines.micro_batch import MicroBatcher
from tts_container.engines.norm_stats import NormStats, VoiceNormStats
from tts_container.engines.torch_vocoder import BatchedGenerator, VocoderCall, decoder_inputs
from tts_container.engines.voices import VoiceTables
from tts_container.engines.windowed_engine import WindowedEngine, choose_growth
from tts_container.engines.windows import STEP_SAMPLES, Pitch, Prosody
from tts_container.text.g2p import MAX_SEGMENT_TOKENS, Phonemizer
from tts_container.weights.cache import CachedWeights
from tts_container.weights.provisioning import ensure_weights

# KModel uses the repo id only to name hub files; passing it explicitly silences its stdout warning.
REPO_ID = "hexgrad/Kokoro-82M"
# The components kokoro-v1_0.pth holds, each an attribute of KModel.
COMPONENTS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
DATA_PARALLEL_PREFIX = "module."
# Calls rendered in one forward pass of the generator at most, by default: on CUDA 32 (a pass of one
# window leaves most of a GPU idle; benchmarks.gpu_capacity measures what batching gains there); on a
# CPU one (a pass there costs about what its windows cost apart, and torch's threads use every core).
DEFAULT_CUDA_BATCH = 32


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


def default_max_batch(device: torch.device) -> int:
    """How many calls one forward pass renders unless the operator says (``--max-batch``)."""
    return DEFAULT_CUDA_BATCH if device.type == "cuda" else 1


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

    Except AdaIN's ``InstanceNorm1d`` scale and shift, which the checkpoint may leave out: kokoro declares
    them (``affine=True``) only to work around an old ONNX exporter's bug, the model was trained without
    them, and the hub's file carries none, so they keep their initial 1 and 0 (no-ops).

    Shapes need no check here: ``load_state_dict`` raises on a shape mismatch even when not strict.
    The second read of the file costs about a second at start-up, once.
    """
    checkpoint = torch.load(model_path, map_location="cpu", weights_only=True)
    problems = []
    for component in COMPONENTS:
        module = getattr(model, component)
        expected = set(module.state_dict())
        if component not in checkpoint:
            problems.append(f"{component}: absent")
            continue
        present = {key.removeprefix(DATA_PARALLEL_PREFIX) for key in checkpoint[component]}
        if missing := sorted(expected - present - _instance_norm_affine(module)):
            problems.append(f"{component}: {len(missing)} weights missing (e.g. {missing[0]})")
        if unexpected := sorted(present - expected):
            problems.append(f"{component}: {len(unexpected)} unexpected weights (e.g. {unexpected[0]})")
    if problems:
        raise CheckpointMismatch(f"{model_path} does not match its config: {'; '.join(problems)}")


def _instance_norm_affine(module: torch.nn.Module) -> set[str]:
    """The state-dict names of every ``InstanceNorm1d``'s scale and shift inside ``module``."""
    return {
        f"{name}.{parameter}"
        for name, child in module.named_modules()
        if isinstance(child, torch.nn.InstanceNorm1d)
        for parameter in ("weight", "bias")
    }


class TorchEngine(WindowedEngine):
    """Kokoro's fp32 ``KModel`` on CUDA or CPU; one instance is shared by every session of the server.

    It renders through the same windowed path as the onnx engine (:mod:`tts_container.engines.windows`):
    :meth:`prosody` runs ``KModel`` up to its generator on a whole segment, :meth:`vocode` runs the
    generator over a window of time steps with the sine source's phase carried in and its instance
    norms' statistics shared (:mod:`tts_container.engines.torch_vocoder`).

    With ``max_batch`` above one the server runs that many calls at once (:attr:`lanes`), each its own
    prosody, and the windows they vocode meanwhile share forward passes of the generator
    (:mod:`tts_container.engines.micro_batch`): batching across listeners, the lever a GPU has.
    """

    name = "torch"
    variant = "float32"

    def __init__(
        self,
        model: KModel,
        voice_tables: VoiceTables,
        *,
        phonemizer: Phonemizer | None = None,
        stats_dir: Path | None = None,
        max_batch: int = 1,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be 1 or more, got {max_batch}")
        self._model = model
        self._vocab: Mapping[str, int] = model.vocab
        self._voice_tables = voice_tables
        self._phonemizer = phonemizer or Phonemizer()
        self._generator = BatchedGenerator(model.decoder.generator)
        self._stats = VoiceNormStats(stats_dir, self._generator.norms)
        self.growth: float | None = None  # set by warm_up(): windows only on an engine slow enough
        # Calls at once: one GPU stream or torch's own threads on a CPU, or a batch's worth.
        self.lanes = max_batch
        self._batcher = MicroBatcher[VocoderCall, tuple[Audio, NormStats]](
            self._render_batch, size=lambda call: call.steps, max_batch=max_batch
        )

    @classmethod
    def from_cache(
        cls,
        cache_dir: Path | str | None = None,
        *,
        device: str | None = None,
        threads: int | None = None,
        max_batch: int | None = None,
    ) -> TorchEngine:
        """Provision the torch part of the cache if needed (see :mod:`tts_container.weights.cache`) and load
        it.

        ``threads`` sets torch's intra-op CPU threads; that setting is process-wide in torch, which is
        fine because the server runs one engine per process. ``max_batch``: calls rendered in one
        forward pass at most (default :func:`default_max_batch`; 1: no batching).
        """
        weights: CachedWeights = ensure_weights(cache_dir, part="torch")
        if threads:
            torch.set_num_threads(threads)
        where = pick_device(device)
        model = load_kmodel(weights.config, weights.torch_model, where)
        return cls(
            model,
            VoiceTables.load(weights.voices),
            stats_dir=weights.derived_dir("norm-stats", weights.torch_model),
            max_batch=default_max_batch(where) if max_batch is None else max_batch,
        )

    @property
    def model(self) -> KModel:
        """The loaded ``KModel`` (its ``.device`` says where it runs); for benchmarks and tests."""
        return self._model

    @property
    def vocab(self) -> Container[str]:
        return self._vocab

    def count_tokens(self, phonemes: str) -> int:
        """Phoneme symbols the model knows (the others are dropped by ``KModel``, as by the onnx engine)."""
        return sum(symbol in self._vocab for symbol in phonemes)

    def prosody(self, phonemes: str, *, voice: str, speed: float, style_tokens: int | None = None) -> Prosody:
        """``KModel`` up to its generator on one segment of at most 510 known symbols."""
        ids = [self._vocab[symbol] for symbol in phonemes if symbol in self._vocab]
        if len(ids) > MAX_SEGMENT_TOKENS:
            raise ValueError(
                f"segment of {len(ids)} tokens exceeds Kokoro's {MAX_SEGMENT_TOKENS}-token context"
            )
        # The same style row as the onnx engine picks (row n_tokens - 1, see VoiceTables.style).
        style = torch.from_numpy(self._voice_tables.style(voice, style_tokens or len(ids))).to(
            self._model.device
        )
        tokens = torch.LongTensor([[0, *ids, 0]]).to(self._model.device)
        with torch.inference_mode():
            durations, features, pitch = decoder_inputs(self._model, tokens, style, speed)
        pitch_host = pitch.reshape(-1).to(device="cpu", dtype=torch.float32).numpy()
        seed = noise_seed(phonemes, voice=voice, speed=speed, style_tokens=style_tokens or len(ids))
        return Prosody(
            tuple(int(d) for d in durations.reshape(-1)), pitch_host, (features, pitch, style[:, :128], seed)
        )

    def segments(
        self,
        text: str,
        *,
        voice: str,
        speed: float,
        lang: str,
        context: Context = NO_CONTEXT,
    ) -> Iterator[Segment]:
        """As :meth:`WindowedEngine.segments`; each piece's call counts as inside the engine, so a batch's
        leader waits for it (briefly) while it runs its prosody."""
        pieces = super().segments(text, voice=voice, speed=speed, lang=lang, context=context)
        return self._batcher.counted(pieces)

    def vocode(
        self, prosody: Prosody, start: int, stop: int, *, phase: Pitch, stats: NormStats | None
    ) -> tuple[Audio, NormStats | None]:
        """Audio of steps ``[start, stop)``; normalized with ``stats`` if given, else its own (returned).
        Rendered in one forward pass with the windows other calls vocode meanwhile (up to ``lanes``)."""
        features, pitch, style, seed = prosody.features
        call = VocoderCall(
            features[:, :, start:stop],
            pitch[:, start:stop],
            style,
            np.asarray(phase, dtype=np.float32),
            stats,
            seed,
            start * STEP_SAMPLES,
        )
        return self._batcher.submit(call)

    def batch_counts(self) -> BatchCounts:
        """The forward passes rendered so far and how many calls each held (``/stats``, ``/metrics``)."""
        return self._batcher.counts()

    def _render_batch(self, calls: Sequence[VocoderCall]) -> list[tuple[Audio, NormStats]]:
        with torch.inference_mode():
            return self._generator(calls)

    def warm_up(self, voice: str = DEFAULT_VOICE) -> None:
        """Run G2P and the model once (CUDA kernels, cuDNN autotuning), measure the generator's speed
        and, when it is slow enough to render in windows, have ``voice``'s vocoder statistics ready."""
        for _ in self.segments("Ready.", voice=voice, speed=1.0, lang=DEFAULT_LANG):
            pass
        self.growth = choose_growth(self, self._phonemizer, self._stats, voice)


def noise_seed(phonemes: str, *, voice: str, speed: float, style_tokens: int) -> int:
    """The seed of a segment's source noise: a function of what the segment is (its phonemes, voice,
    speed and style row), so the segment rendered again hears the same noise."""
    key = f"{voice}\0{speed!r}\0{style_tokens}\0{phonemes}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=4).digest(), "little") & 0x7FFFFFFF
