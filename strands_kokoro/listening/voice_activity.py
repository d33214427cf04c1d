"""Voice activity: silero VAD (the ONNX model faster-whisper ships in its package), frame by frame.

:class:`SileroVoiceActivity` keeps the model's recurrent state and the last 64 samples across calls, so
a stream read in pieces of any size gives the probabilities one whole read would (512-sample frames,
32 ms at 16 kHz). Inference runs off the event loop (``asyncio.to_thread``), one call per piece read.
"""

from __future__ import annotations

import asyncio
from importlib.resources import files
from typing import Any

import numpy as np
import onnxruntime

__all__ = ["FRAME_SAMPLES", "SileroVoiceActivity"]

FRAME_SAMPLES = 512  # silero's frame at 16 kHz
CONTEXT_SAMPLES = 64  # the samples of the previous frame each frame is read with
MODEL_FILE = "silero_vad_v6.onnx"


def _session() -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1
    options.log_severity_level = 4
    path = files("faster_whisper").joinpath("assets", MODEL_FILE)
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"], sess_options=options)


class SileroVoiceActivity:
    """Speech probabilities of whole 512-sample frames of 16 kHz s16le PCM; the remainder waits."""

    def __init__(self) -> None:
        self._session = _session()
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT_SAMPLES, dtype=np.float32)
        self._pending = b""

    async def frames(self, pcm: bytes) -> list[tuple[bytes, float]]:
        """The whole frames ``pcm`` completes (with what was left over before), each with its speech
        probability; the samples past the last whole frame wait for the next call."""
        data = self._pending + pcm
        whole = len(data) // (2 * FRAME_SAMPLES) * 2 * FRAME_SAMPLES
        self._pending = data[whole:]
        if not whole:
            return []
        frames = [data[i : i + 2 * FRAME_SAMPLES] for i in range(0, whole, 2 * FRAME_SAMPLES)]
        probabilities = await asyncio.to_thread(self._infer, data[:whole])
        return list(zip(frames, probabilities, strict=True))

    def _infer(self, pcm: bytes) -> list[float]:
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        out: list[float] = []
        for frame in audio.reshape(-1, FRAME_SAMPLES):
            window = np.concatenate([self._context, frame])[np.newaxis, :]
            result: Any = self._session.run(None, {"input": window, "h": self._h, "c": self._c})
            probability, self._h, self._c = result
            self._context = frame[-CONTEXT_SAMPLES:]
            out.append(float(np.asarray(probability).reshape(-1)[0]))
        return out
