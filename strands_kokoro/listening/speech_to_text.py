"""Speech-to-text: faster-whisper on Whisper-base (:mod:`~strands_kokoro.listening.whisper_weights`).

:class:`WhisperTranscriber` loads the model once (off the event loop) and transcribes one utterance at
a time in a worker thread. An utterance is short (a spoken turn), so the encoder reads a window sized to
it (the utterance plus ``window_padding_s`` of silence, whole seconds) instead of Whisper's fixed 30 s,
and the decoder writes greedily without timestamps, with a token budget for the window's length. When
that output repeats itself (Whisper's compression-ratio test, or its start again), or the utterance is
30 s or longer, it is transcribed again by faster-whisper's ``transcribe`` on full 30 s windows. The model's
VAD filter is off (the cascade's turn-taking already cut the utterance) and no earlier text conditions
the next.
"""

from __future__ import annotations

import asyncio
import math
import re
from typing import Any

import numpy as np

from strands_kokoro.listening.whisper_weights import whisper_model_dir

__all__ = ["WhisperTranscriber", "holds_no_words", "repeats_itself"]

RATE = 16_000
FRAMES_PER_S = 100  # Whisper's mel frames per second of audio
WINDOW_FRAMES = 3000  # Whisper's full window (30 s)
TOKENS_PER_S = 10  # a generous speaking rate in Whisper tokens: the budget of a sized window
MIN_TOKENS = 24
MAX_COMPRESSION_RATIO = 2.4  # faster-whisper's default threshold for a repeating (failed) decoding
NO_SPEECH_PROB, MIN_LOG_PROB = 0.6, -1.0  # faster-whisper's defaults: a window without speech


_ANNOTATION = re.compile(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*")  # Whisper's "[BLANK_AUDIO]", "(coughs)"
_HUM = re.compile(r"(h*m+h*)+|u+h+|u+m+|e+r+m*|a+h+|h+m+", re.IGNORECASE)  # "mmm", "hmm", "uhh", "umm", "ahh"


def holds_no_words(text: str) -> bool:
    """Is ``text`` what Whisper writes for a sound that is not speech: nothing, punctuation, a bracketed
    annotation, or hums ("Mmmm", "Hmm...", "uhh")?"""
    words = re.findall(r"[^\W_]+(?:['-][^\W_]+)*", _ANNOTATION.sub(" ", text))
    return all(_HUM.fullmatch(word) for word in words)


def repeats_itself(tokens: list[int], *, min_repeat: int = 4) -> bool:
    """Does the decoding say its own start again (``A B C . A B C``)? Whisper does so in the silence after
    the speech; at least ``min_repeat`` tokens must repeat."""
    for period in range(1, len(tokens) - min_repeat + 1):
        if tokens[period:] == tokens[: len(tokens) - period]:
            return True
    return False


class WhisperTranscriber:
    """Transcribes 16 kHz s16le PCM utterances with faster-whisper (``language=None``: detected).

    ``window_padding_s``: the silence after the utterance in the encoder's window; ``None`` reads every
    utterance in Whisper's full 30 s windows.
    """

    def __init__(
        self,
        *,
        language: str | None = "en",
        cpu_threads: int = 2,
        beam_size: int = 1,
        window_padding_s: float | None = 2.0,
    ) -> None:
        self.language = language
        self.cpu_threads = cpu_threads
        self.beam_size = beam_size
        self.window_padding_s = window_padding_s
        self._model: Any = None
        self._tokenizer: Any = None
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
        if self.window_padding_s is not None and self.language is not None and len(audio) < 30 * RATE:
            text = self._sized_window(audio, self.window_padding_s)
            if text is not None:
                return text
        return self._full_windows(audio)

    def _sized_window(self, audio: np.ndarray, padding_s: float) -> str | None:
        """One greedy decoding of an encoder window the utterance's size; None when it repeats itself."""
        from faster_whisper.audio import pad_or_trim
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_compression_ratio, get_suppressed_tokens

        model = self._model
        if self._tokenizer is None:
            self._tokenizer = Tokenizer(model.hf_tokenizer, True, task="transcribe", language=self.language)
        tokenizer = self._tokenizer
        features = model.feature_extractor(audio)
        seconds = math.ceil(features.shape[-1] / FRAMES_PER_S + padding_s)
        window = pad_or_trim(features, min(WINDOW_FRAMES, seconds * FRAMES_PER_S))
        prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
        budget = max(MIN_TOKENS, math.ceil(len(audio) / RATE * TOKENS_PER_S))
        (result,) = model.model.generate(
            model.encode(window),
            [prompt],
            beam_size=self.beam_size,
            max_length=min(model.max_length, len(prompt) + budget),
            suppress_blank=True,
            suppress_tokens=get_suppressed_tokens(tokenizer, [-1]),
            return_scores=True,
            return_no_speech_prob=True,
        )
        written = result.sequences_ids[0]
        tokens = [t for t in written if t < tokenizer.eot]
        log_prob = result.scores[0] * len(written) / (len(written) + 1)  # the mean, as faster-whisper's
        if result.no_speech_prob > NO_SPEECH_PROB and log_prob < MIN_LOG_PROB:
            return ""  # Whisper's own test: no speech in the window (a breath, a noise)
        text: str = tokenizer.decode(tokens).strip()
        if (
            len(tokens) >= budget
            or repeats_itself(tokens)
            or (text and get_compression_ratio(text) > MAX_COMPRESSION_RATIO)
        ):
            return None
        return text

    def _full_windows(self, audio: np.ndarray) -> str:
        segments, _ = self._model.transcribe(
            audio,
            language=self.language,
            beam_size=self.beam_size,
            vad_filter=False,
            condition_on_previous_text=False,
            without_timestamps=True,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()
