"""Speech-to-text: faster-whisper on Whisper-base (:mod:`~strands_kokoro.listening.whisper_weights`).

:class:`WhisperTranscriber` loads the model once (off the event loop) and transcribes one utterance at
a time in a worker thread; the model's own VAD filter is off (the cascade's turn-taking already cut the
utterance).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from strands_kokoro.listening.whisper_weights import whisper_model_dir

__all__ = ["WhisperTranscriber"]


class WhisperTranscriber:
    """Transcribes 16 kHz s16le PCM utterances with faster-whisper (``language=None``: detected)."""

    def __init__(self, *, language: str | None = "en", cpu_threads: int = 2, beam_size: int = 1) -> None:
        self.language = language
        self.cpu_threads = cpu_threads
        self.beam_size = beam_size
        self._model: Any = None
        self._lock = asyncio.Lock()

    async def load(self) -> None:
        """Load the model now (it loads on the first utterance otherwise)."""
        async with self._lock:
            if self._model is None:
                self._model = await asyncio.to_thread(self._load)

    def _load(self) -> Any:
        from faster_whisper import WhisperModel

        return WhisperModel(
            str(whisper_model_dir()), device="cpu", compute_type="int8", cpu_threads=self.cpu_threads
        )

    async def transcribe(self, pcm: bytes) -> str:
        """What was said in ``pcm`` (16 kHz s16le mono), in one line."""
        await self.load()
        async with self._lock:  # one utterance at a time: the model is not shared across threads
            return await asyncio.to_thread(self._transcribe, pcm)

    def _transcribe(self, pcm: bytes) -> str:
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        segments, _ = self._model.transcribe(
            audio,
            language=self.language,
            beam_size=self.beam_size,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()
