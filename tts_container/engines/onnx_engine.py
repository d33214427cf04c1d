"""The CPU engine: Kokoro-82M's int8 ONNX export run directly on onnxruntime, in two halves.

Why onnxruntime directly and not ``kokoro_onnx.Kokoro``: what we need from it is ~20 lines (vocab lookup,
style row, ``session.run``), while the class brings its own eSpeak phonemizer (we phonemize with misaki,
shared with the torch engine), its own sentence batching (we split phonemes ourselves to stream per
segment), and loads voices from its own file format. Running the sessions ourselves also lets us set the
thread counts, accept both exports' input names (``tokens`` in the int8 release, ``input_ids`` in the
hub's ``onnx-community`` export) and, above all, run the export in two halves
(:mod:`tts_container.engines.onnx_graphs`): prosody once per segment, the vocoder window by window
(:mod:`tts_container.engines.windows`), so a sentence's first audio leaves after its prosody and one
small window instead of after all of it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Container, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from strands_kokoro.protocol import DEFAULT_LANG, DEFAULT_VOICE
from tts_container.engines.ada_snake import NATIVE_DIR, OperatorUnavailable, fuse_snakes, operator_library
from tts_container.engines.base import Audio, call_lanes
from tts_container.engines.conv_integer import as_matmuls
from tts_container.engines.norm_stats import NormStats, VoiceNormStats, calibration_for
from tts_container.engines.onnx_graphs import (
    AUDIO,
    DURATIONS_OUTPUT,
    FEATURES,
    PHASE_OFFSET,
    PITCH,
    USE_STATS,
    UnexpectedGraph,
    edited_model,
    norm_mean,
    norm_var,
    split_export,
)
from tts_container.engines.static_int8 import STATIC_DIR, static_vocoder
from tts_container.engines.torch_free import import_spacy_without_torch
from tts_container.engines.voices import VoiceTables
from tts_container.engines.windowed_engine import SPEED_PROBE_TEXT, WindowedEngine, choose_growth
from tts_container.engines.windows import HARMONICS, STEP_SAMPLES, Pitch, Prosody
from tts_container.synthesis.utterance import plan_utterance
from tts_container.text.g2p import MAX_SEGMENT_TOKENS, Phonemizer
from tts_container.weights.cache import CachedWeights
from tts_container.weights.provisioning import ensure_weights

logger = logging.getLogger(__name__)

_PROVIDERS = ["CPUExecutionProvider"]
# The vocoder variants: the export's own dynamic int8, and the static int8 derived from it
# (:mod:`tts_container.engines.static_int8`), ``fused`` where the AdaSnake operator builds here
# (:mod:`tts_container.engines.ada_snake`), else plain ``static``. ``auto`` times the two loaded at
# warm-up and keeps the faster.
VARIANT_ENV = "STRANDS_KOKORO_VOCODER"
AUTO, DYNAMIC, STATIC, FUSED = "auto", "dynamic", "static", "fused"
# Voices whose calibration sentences calibrate the static vocoder's activations: a low and a high voice.
CALIBRATION_VOICES = ("af_heart", "am_michael")
CALIBRATION_SEGMENTS = 6  # of each voice's calibration text
_NO_STATS = np.zeros((1, 1, 1), dtype=np.float32)  # unused when use_stats is false; broadcasts


def load_vocab(config_path: Path) -> dict[str, int]:
    """Kokoro's phoneme → token id table, from ``config.json``."""
    vocab = json.loads(config_path.read_text(encoding="utf-8"))["vocab"]
    return {str(symbol): int(token) for symbol, token in vocab.items()}


def session_options(threads: int | None) -> ort.SessionOptions:
    """Intra-op threads = ``threads`` (default: every core); one inter-op thread (the graph is a chain).

    Spinning is off: idle onnxruntime workers otherwise busy-wait between ops, which on a small shared CPU
    steals the cores the LLM needs to write the next sentence while this one is being spoken.
    """
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


class OnnxEngine(WindowedEngine):
    """Kokoro on onnxruntime's CPU provider; one instance is shared by every session of the server.

    ``stats_dir``: where each voice's vocoder statistics are kept (computed once per voice and model
    file; without them a voice's segments are rendered in one call each).
    """

    name = "onnx"

    def __init__(
        self,
        model_path: Path,
        vocab: Mapping[str, int],
        voice_tables: VoiceTables,
        *,
        threads: int | None = None,
        phonemizer: Phonemizer | None = None,
        stats_dir: Path | None = None,
    ) -> None:
        import_spacy_without_torch()  # the phonemizer's spaCy, before anything imports it with torch
        options = session_options(threads)
        try:
            graphs = split_export(model_path)
        except UnexpectedGraph:
            # Durations are still needed (word timings, where a segment's own words are): an export
            # without Kokoro's duration predictor raises UnexpectedGraph here and the engine does not load.
            logger.warning("%s is not the export the graph split knows: whole segments only", model_path.name)
            self._whole: ort.InferenceSession | None = ort.InferenceSession(
                edited_model(model_path), sess_options=options, providers=_PROVIDERS
            )
            inputs = self._whole.get_inputs()
            self._norms = 0
            self.lanes = 1
        else:
            self._whole = None
            # Sessions per share of the cores: all of them for a call alone, half for each of two calls
            # side by side (intra-op threads are a session's, fixed when it is made).
            self._cores = options.intra_op_num_threads
            self.lanes = 2 if self._cores >= 2 else 1
            self._graphs = graphs
            prosody, _ = as_matmuls(graphs.prosody)  # the same numbers on faster kernels
            self._prosody = {
                lanes: _session(prosody, session_options(self._cores // lanes))
                for lanes in range(1, self.lanes + 1)
            }
            self._variants = {DYNAMIC: self._load_variant(graphs.vocoder)}
            inputs = self._prosody[1].get_inputs()
            self._norms = graphs.norms
        self.variant = DYNAMIC
        dtypes = {i.name: _numpy_dtype(i.type) for i in inputs}
        self._tokens_input = "input_ids" if "input_ids" in dtypes else "tokens"
        self._tokens_dtype = dtypes[self._tokens_input]
        self._speed_dtype = dtypes.get("speed", np.dtype(np.float32))
        self._vocab = dict(vocab)
        self._voice_tables = voice_tables
        self._phonemizer = phonemizer or Phonemizer()
        self._stats_dir = stats_dir
        self._stats = VoiceNormStats(stats_dir, self._norms)
        self._stat_names = [name for i in range(self._norms) for name in (norm_mean(i), norm_var(i))]
        self.growth: float | None = None  # set by warm_up(): windows only on an engine slow enough

    @classmethod
    def from_cache(cls, cache_dir: Path | str | None = None, *, threads: int | None = None) -> OnnxEngine:
        """Provision the weights if needed (see :mod:`tts_container.weights.cache`) and load them."""
        weights: CachedWeights = ensure_weights(cache_dir, part="onnx")
        engine = cls(
            weights.onnx_model,
            load_vocab(weights.config),
            VoiceTables.load(weights.voices),
            threads=threads,
            stats_dir=weights.derived_dir("norm-stats", weights.onnx_model),
        )
        if engine._whole is None and requested_variant() != DYNAMIC:
            engine.add_static_variant(
                weights.derived_dir(STATIC_DIR, weights.onnx_model), weights.root / NATIVE_DIR
            )
        return engine

    def add_static_variant(self, cache_dir: Path | None, native_dir: Path | None = None) -> None:
        """Load the static-int8 vocoder (:mod:`~tts_container.engines.static_int8`), derived from this
        export's vocoder and calibrated on this engine's own prosody when ``cache_dir`` has none yet: as
        :data:`FUSED` when the AdaSnake operator is built or cached in ``native_dir``, else (or with no
        ``native_dir``) as :data:`STATIC`. An operator who asked for :data:`FUSED` gets
        :class:`OperatorUnavailable` instead."""
        vocoder = static_vocoder(self._graphs.vocoder, cache_dir, self._calibration_feeds)
        wanted = requested_variant()
        if wanted == FUSED and native_dir is None:
            raise OperatorUnavailable("no folder to build the AdaSnake operator in")
        if wanted != STATIC and native_dir is not None:
            try:
                library = operator_library(native_dir)
            except OperatorUnavailable as exc:
                if wanted == FUSED:
                    raise
                logger.warning("static vocoder without the AdaSnake operator: %s", exc)
            else:
                fused, count = fuse_snakes(vocoder)
                logger.info("static vocoder with %d AdaSnake nodes (%s)", count, library.name)
                self._variants[FUSED] = self._load_variant(fused, library)
                return
        self._variants[STATIC] = self._load_variant(vocoder)

    def _load_variant(self, vocoder: bytes, library: Path | None = None) -> dict[int, _Halves]:
        """Sessions per share of the cores: all of them for a call alone, half for each of two calls side
        by side (intra-op threads are a session's, fixed when it is made); every variant shares the
        prosody half. ``library``: custom operators the graph calls."""
        halves = {}
        for lanes, prosody in self._prosody.items():
            options = session_options(self._cores // lanes)
            if library is not None:
                options.register_custom_ops_library(str(library))
            halves[lanes] = _Halves(prosody, _session(vocoder, options))
        return halves

    def _calibration_feeds(self) -> Iterator[dict[str, object]]:
        """The vocoder's inputs for the calibration sentences, whole segments with their own statistics."""
        zero = np.zeros(HARMONICS, dtype=np.float32)
        for voice in CALIBRATION_VOICES:
            text, lang = calibration_for(voice)
            for segment in plan_utterance(self._phonemizer, text, voice=voice, lang=lang)[
                :CALIBRATION_SEGMENTS
            ]:
                prosody = self.prosody(segment.phonemes.text, voice=voice, speed=1.0)
                yield self._vocoder_feeds(prosody, 0, prosody.steps, phase=zero, stats=None)

    @property
    def vocab(self) -> Container[str]:
        return self._vocab

    def prosody(self, phonemes: str, *, voice: str, speed: float, style_tokens: int | None = None) -> Prosody:
        """Durations, decoder features and pitch of one segment of at most 510 known symbols."""
        tokens = [self._vocab[symbol] for symbol in phonemes if symbol in self._vocab]
        if len(tokens) > MAX_SEGMENT_TOKENS:
            raise ValueError(f"segment of {len(tokens)} tokens exceeds Kokoro's 510-token context")
        style = self._voice_tables.style(voice, style_tokens or len(tokens))
        inputs = {
            self._tokens_input: np.array([[0, *tokens, 0]], dtype=self._tokens_dtype),
            "style": style,
            "speed": np.array([speed], dtype=self._speed_dtype),
        }
        if self._whole is not None:
            audio, durations = self._whole.run(None, inputs)
            audio = np.asarray(audio, dtype=np.float32).reshape(-1)
            pitch = np.zeros(audio.size // STEP_SAMPLES, dtype=np.float32)
            return Prosody(_frames(durations), pitch, audio)
        durations, features, pitch = self._halves_now().prosody.run(
            [DURATIONS_OUTPUT, FEATURES, PITCH], inputs
        )
        pitch = np.asarray(pitch, dtype=np.float32)
        return Prosody(_frames(durations), pitch.reshape(-1), (features, pitch, style))

    def vocode(
        self, prosody: Prosody, start: int, stop: int, *, phase: Pitch, stats: NormStats | None
    ) -> tuple[Audio, NormStats | None]:
        """Audio of steps ``[start, stop)``; normalized with ``stats`` if given, else its own (returned)."""
        if self._whole is not None:
            return prosody.features[start * STEP_SAMPLES : stop * STEP_SAMPLES], None
        inputs = self._vocoder_feeds(prosody, start, stop, phase=phase, stats=stats)
        outputs = [AUDIO, *(f"{n}_out" for n in self._stat_names)]
        audio, *measured = self._halves_now().vocoder.run(outputs, inputs)
        own = NormStats(tuple(measured[0::2]), tuple(measured[1::2]), stop - start)
        return np.asarray(audio, dtype=np.float32).reshape(-1), stats or own

    def _vocoder_feeds(
        self, prosody: Prosody, start: int, stop: int, *, phase: Pitch, stats: NormStats | None
    ) -> dict[str, object]:
        features, pitch, style = prosody.features
        inputs: dict[str, object] = {
            FEATURES: features[:, :, start:stop],
            PITCH: pitch[:, start:stop],
            "style": style,
            PHASE_OFFSET: phase.reshape(1, 1, -1),
            USE_STATS: np.array(stats is not None),
        }
        for index in range(self._norms):
            inputs[norm_mean(index)] = stats.means[index] if stats else _NO_STATS
            inputs[norm_var(index)] = stats.variances[index] if stats else _NO_STATS
        return inputs

    def _halves_now(self) -> _Halves:
        """The sessions for this call's share of the cores (the pool says how many calls share them)."""
        halves = self._variants[self.variant]
        return halves.get(call_lanes.get(), halves[1])

    @property
    def variants(self) -> tuple[str, ...]:
        """The vocoder variants loaded: :data:`DYNAMIC`, and :data:`FUSED` or :data:`STATIC` unless the
        operator said not."""
        return tuple(self._variants) if self._whole is None else ()

    def choose_variant(self, voice: str = DEFAULT_VOICE, *, keep_variants: bool = False) -> str:
        """Make the variant that renders the speed probe fastest (two rounds, alternating, each variant's
        best) the one every call uses, unless the operator named one (:data:`VARIANT_ENV`); the others'
        sessions are closed (their memory freed) unless ``keep_variants`` (a benchmark measuring each)."""
        wanted = requested_variant()
        if wanted in self._variants:
            self.use_variant(wanted)
            return self._keep_only(wanted, keep_variants)
        (probe,) = plan_utterance(self._phonemizer, SPEED_PROBE_TEXT, voice=voice, lang=DEFAULT_LANG)
        prosody = self.prosody(probe.phonemes.text, voice=voice, speed=1.0)
        zero = np.zeros(HARMONICS, dtype=np.float32)
        best: dict[str, float] = {}
        for _ in range(2):
            for variant in self._variants:
                self.variant = variant
                started = time.perf_counter()
                self.vocode(prosody, 0, prosody.steps, phase=zero, stats=None)
                took = time.perf_counter() - started
                best[variant] = min(took, best.get(variant, took))
        self.use_variant(min(best, key=best.__getitem__))
        logger.info("vocoder variants timed %s: rendering with %s", best, self.variant)
        return self._keep_only(self.variant, keep_variants)

    def _keep_only(self, variant: str, keep_variants: bool) -> str:
        if not keep_variants:
            self._variants = {variant: self._variants[variant]}
        return variant

    def use_variant(self, variant: str) -> None:
        """Render every call with ``variant``; its windows are normalized with statistics fitted on its
        own activations (a folder per variant beside the export's)."""
        self.variant = variant
        folder = self._stats_dir / variant if self._stats_dir is not None and variant != DYNAMIC else None
        self._stats = VoiceNormStats(folder or self._stats_dir, self._norms)

    def warm_up(self, voice: str = DEFAULT_VOICE, *, keep_variants: bool = False) -> None:
        """Pay the one-off costs now (G2P models, graph optimisation), measure the vocoder's speed, and,
        when it is slow enough to render in windows, have ``voice``'s vocoder statistics ready."""
        for _ in self.segments("Ready.", voice=voice, speed=1.0, lang=DEFAULT_LANG):
            pass
        if self._whole is None:
            self.choose_variant(voice, keep_variants=keep_variants)
            self.growth = choose_growth(self, self._phonemizer, self._stats, voice)


@dataclass(frozen=True, slots=True)
class _Halves:
    """The export's two halves as sessions with one thread count."""

    prosody: ort.InferenceSession
    vocoder: ort.InferenceSession


def _session(model: bytes, options: ort.SessionOptions) -> ort.InferenceSession:
    return ort.InferenceSession(model, sess_options=options, providers=_PROVIDERS)


def requested_variant() -> str:
    """The vocoder variant the operator asked for in :data:`VARIANT_ENV` (``auto`` when unset)."""
    wanted = os.environ.get(VARIANT_ENV, AUTO).strip().lower() or AUTO
    if wanted not in (AUTO, DYNAMIC, STATIC, FUSED):
        raise ValueError(f"{VARIANT_ENV}={wanted!r}: choose one of {AUTO}, {DYNAMIC}, {STATIC}, {FUSED}")
    return wanted


def _frames(durations: object) -> tuple[int, ...]:
    return tuple(int(frames) for frames in np.asarray(durations).reshape(-1))


def _numpy_dtype(onnx_type: str) -> np.dtype[np.generic]:
    """``tensor(int64)`` → ``int64``: the input's element type, so both exports get what they declare."""
    names = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float)": np.float32}
    return np.dtype(names.get(onnx_type, np.float32))
