"""The CPU engine: Kokoro-82M's int8 ONNX export run directly on onnxruntime.

Why onnxruntime directly and not ``kokoro_onnx.Kokoro``: what we need from it is ~20 lines (vocab lookup,
style row, one ``session.run``), while the class brings its own eSpeak phonemizer (we phonemize with
misaki, shared with the torch engine), its own sentence batching (we split phonemes ourselves to stream
per segment), and loads voices from its own file format. Running the session ourselves also lets us set
the thread counts and accept both exports' input names (``tokens`` in the int8 release, ``input_ids`` in
the hub's ``onnx-community`` export).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import onnxruntime as ort

from tts_container.engines.base import Audio, Segment
from tts_container.engines.timed_graph import DURATIONS_OUTPUT, UnexpectedGraph, edited_model
from tts_container.engines.voices import DEFAULT_VOICE, UnknownVoice, VoiceTables
from tts_container.g2p import Phonemizer
from tts_container.provisioning import ensure_weights
from tts_container.weights import CachedWeights

logger = logging.getLogger(__name__)


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


class OnnxEngine:
    """Kokoro on onnxruntime's CPU provider; one instance is shared by every session of the server."""

    name = "onnx"

    def __init__(
        self,
        model_path: Path,
        vocab: Mapping[str, int],
        voice_tables: VoiceTables,
        *,
        threads: int | None = None,
        phonemizer: Phonemizer | None = None,
    ) -> None:
        try:
            model: bytes | str = edited_model(model_path)
        except UnexpectedGraph:
            logger.warning("%s is not the export the graph edit knows: no word timings", model_path.name)
            model = str(model_path)
        self._session = ort.InferenceSession(
            model, sess_options=session_options(threads), providers=["CPUExecutionProvider"]
        )
        self._timed = DURATIONS_OUTPUT in {output.name for output in self._session.get_outputs()}
        dtypes = {i.name: _numpy_dtype(i.type) for i in self._session.get_inputs()}
        self._tokens_input = "input_ids" if "input_ids" in dtypes else "tokens"
        self._tokens_dtype = dtypes[self._tokens_input]
        self._speed_dtype = dtypes.get("speed", np.dtype(np.float32))
        self._vocab = dict(vocab)
        self._voice_tables = voice_tables
        self._phonemizer = phonemizer or Phonemizer()

    @classmethod
    def from_cache(cls, cache_dir: Path | str | None = None, *, threads: int | None = None) -> OnnxEngine:
        """Provision the weights if needed (see :mod:`tts_container.weights`) and load them."""
        weights: CachedWeights = ensure_weights(cache_dir, part="onnx")
        return cls(
            weights.onnx_model, load_vocab(weights.config), VoiceTables.load(weights.voices), threads=threads
        )

    @property
    def voices(self) -> frozenset[str]:
        return self._voice_tables.names

    def segments(self, text: str, *, voice: str, speed: float, lang: str) -> Iterator[Segment]:
        """Phonemize once, then synthesize and yield one segment at a time (see ``split_phonemes``)."""
        if voice not in self._voice_tables.names:
            raise UnknownVoice(f"unknown voice {voice!r}")
        phonemes = self._phonemizer.phonemes(text, lang=lang, voice=voice)
        for segment in phonemes.split():
            audio, durations = self.synthesize_timed(segment.text, voice=voice, speed=speed)
            if audio.size:
                words = segment.word_timings(durations, self._vocab) if durations is not None else ()
                yield Segment(audio, words)

    def synthesize_phonemes(self, phonemes: str, *, voice: str, speed: float) -> Audio:
        """Audio for one segment of at most 510 phonemes; symbols outside the vocab are dropped."""
        return self.synthesize_timed(phonemes, voice=voice, speed=speed)[0]

    def synthesize_timed(self, phonemes: str, *, voice: str, speed: float) -> tuple[Audio, list[int] | None]:
        """Audio and, from the edited graph, every token's duration in frames (pads included)."""
        tokens = [self._vocab[symbol] for symbol in phonemes if symbol in self._vocab]
        if not tokens:
            return np.zeros(0, dtype=np.float32), None
        if len(tokens) > 510:
            raise ValueError(f"segment of {len(tokens)} tokens exceeds Kokoro's 510-token context")
        inputs = {
            self._tokens_input: np.array([[0, *tokens, 0]], dtype=self._tokens_dtype),
            "style": self._voice_tables.style(voice, len(tokens)),
            "speed": np.array([speed], dtype=self._speed_dtype),
        }
        (audio, *rest) = self._session.run(None, inputs)
        durations = [int(frames) for frames in np.asarray(rest[0]).reshape(-1)] if self._timed else None
        return np.asarray(audio, dtype=np.float32).reshape(-1), durations

    def warm_up(self) -> None:
        """Run G2P and the model once so the first real request pays no lazy-initialisation cost."""
        voice = DEFAULT_VOICE if DEFAULT_VOICE in self.voices else min(self.voices)
        for _ in self.segments("Ready.", voice=voice, speed=1.0, lang="en-us"):
            pass


def _numpy_dtype(onnx_type: str) -> np.dtype[np.generic]:
    """``tensor(int64)`` → ``int64``: the input's element type, so both exports get what they declare."""
    names = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float)": np.float32}
    return np.dtype(names.get(onnx_type, np.float32))
