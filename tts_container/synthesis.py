"""One request's audio as an async stream of PCM frames, shared by the WebSocket session and POST.

Why an async generator that pulls segment by segment: the first frame leaves as soon as the engine's
first segment is ready (not after the whole text), and a consumer that stops iterating (a ``cancel``,
a disconnect) stops the engine at the next segment boundary. ``aclose()`` (use
``contextlib.aclosing``) closes the engine's iterator so nothing of the request stays behind.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass

from strands_kokoro.protocol import DEFAULT_VOICE, ErrorCode, ServerError, SynthesizeRequest, Word, shown
from tts_container.audio import SegmentJoiner, split_frames
from tts_container.engines.base import Audio, Context, Engine, Segment
from tts_container.g2p import UnsupportedLanguage, dialect_for, request_lang
from tts_container.inference import InferencePool
from tts_container.voice_calibration import VoiceCalibrator


@dataclass(frozen=True, slots=True)
class Synthesizer:
    """The shared engine and the pool every engine call goes through, what sessions advertise in
    ``session_start`` (measured at warm-up): a sentence's first-audio latency, the real-time factor, and
    the calibrator that readies every voice requested to stream (None during warm-up)."""

    engine: Engine
    pool: InferencePool
    first_audio_ms: float | None = None
    rtf: float | None = None
    calibrator: VoiceCalibrator | None = None

    def refusal(self, request: SynthesizeRequest) -> ServerError | None:
        """Why this engine cannot speak ``request`` at all (checked before any audio), or None."""
        if request.voice not in self.engine.voices:
            message = (
                f"unknown voice {shown(request.voice)}; try {DEFAULT_VOICE} (GET /voices lists them all)"
            )
            return ServerError(request.request_id, ErrorCode.UNKNOWN_VOICE, message)
        try:
            dialect_for(request.lang, request.voice)
        except UnsupportedLanguage as exc:
            return ServerError(request.request_id, ErrorCode.UNSUPPORTED_LANG, str(exc))
        return None

    async def pcm_frames(
        self, request: SynthesizeRequest, words: list[Word] | None = None
    ) -> AsyncGenerator[bytes]:
        """Yield s16le PCM frames at ``request.sample_rate``; raises what the engine raises.

        ``words`` (optional) receives when each word is heard, in ms of the audio yielded (after the
        joiner's trimming), segment by segment as their audio goes out.
        """
        context = Context(request.previous_text, request.next_text)
        serving = self.calibrator.serving(request.voice) if self.calibrator else contextlib.nullcontext()
        with serving:
            # Even starting the iterator goes through the pool: an engine may phonemize eagerly.
            segments = await self.pool.run(
                lambda: iter(
                    self.engine.segments(
                        request.text,
                        voice=request.voice,
                        speed=request.speed,
                        lang=request_lang(request.lang, request.voice),
                        context=context,
                    )
                )
            )
            joiner = SegmentJoiner(request.sample_rate)
            try:
                while (segment := await self.pool.run(lambda: _next_or_none(segments))) is not None:
                    pcm = joiner.segment(segment)
                    if words is not None:
                        words.extend(joiner.words)
                    for frame in split_frames(pcm):
                        yield frame
                for frame in split_frames(joiner.finish()):
                    yield frame
            finally:
                close = getattr(segments, "close", None)
                if close is not None:
                    close()


def _next_or_none(segments: Iterator[Segment | Audio]) -> Segment | Audio | None:
    return next(segments, None)
