"""One real onnx engine (real weights in the default cache) shared by the engine and ASR tests.

Loading is cheap (~2 s) but the first G2P call loads spaCy and misaki's lexicons (~10-20 s on a busy
2-core machine), so test modules share a single warmed instance.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from tts_container.engines.onnx_engine import OnnxEngine


@cache
def shared_onnx_engine() -> OnnxEngine:
    engine = OnnxEngine.from_cache(threads=2)
    engine.warm_up(keep_variants=True)  # the static-int8 tests compare both vocoders
    return engine


def synthesize(engine: OnnxEngine, text: str, voice: str = "af_heart", speed: float = 1.0) -> np.ndarray:
    """The whole utterance: every piece joined (tests look at content, not at joins)."""
    pieces = [piece.audio for piece in engine.segments(text, voice=voice, speed=speed, lang="en-us")]
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
