"""One request's audio as an async stream of PCM frames, shared by the WebSocket session and POST.

Why an async generator that pulls segment by segment: the first frame leaves as soon as the engine's
first segment is ready (not after the whole text), and a consumer that stops iterating (a ``cancel``,
a disconnect) stops the engine at the next segment boundary. ``aclose()`` (use
``contextlib.aclosing``) closes the engine's iterator so nothing of the request stays behind.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from strands_kokoro.protocol import (
    DEFAULT_VOICE,
    ErrorCode,
    ServerError,
    SynthesizeRequest,
    Word,
    audio_ms,
    shown,
    voice_names,
)
from tts_container.engines.base import NATIVE_SAMPLE_RATE, Audio, Context, Engine, Segment
from tts_container.engines.voice_calibration import VoiceCalibrator
from tts_container.scheduling.capacity import Capacity
from tts_container.scheduling.inference import InferencePool
from tts_container.scheduling.listener import ListenerClock
from tts_container.synthesis.stitching import SegmentJoiner, split_frames
from tts_container.text.g2p import UnsupportedLanguage, dialect_for, request_lang
from tts_container.text.pronunciation import Pause, apply_lexicon, spoken_parts, without_pauses


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
    capacity: Capacity = field(default_factory=Capacity)

    def refusal(self, request: SynthesizeRequest) -> ServerError | None:
        """Why this engine cannot speak ``request`` at all (checked before any audio), or None."""
        names = voice_names(request.voice)  # a mix's voices (the request's parsing checked its form)
        unknown = [name for name in names if name not in self.engine.voices] or (
            [] if names else [request.voice]
        )
        if unknown:
            message = f"unknown voice {shown(unknown[0])}; try {DEFAULT_VOICE} (GET /voices lists them all)"
            return ServerError(request.request_id, ErrorCode.UNKNOWN_VOICE, message)
        try:
            dialect_for(request.lang, request.voice)
        except UnsupportedLanguage as exc:
            return ServerError(request.request_id, ErrorCode.UNSUPPORTED_LANG, str(exc))
        return None

    async def pcm_frames(
        self,
        request: SynthesizeRequest,
        words: list[Word] | None = None,
        *,
        listener: ListenerClock | None = None,
        received_at: float | None = None,
    ) -> AsyncGenerator[bytes]:
        """Yield s16le PCM frames at ``request.sample_rate``; raises what the engine raises.

        ``words`` (optional) receives when each word is heard, in ms of the audio yielded (after the
        joiner's trimming), segment by segment as their audio goes out. Pause markers cut the text into
        parts spoken one after another with their silence between; the request's lexicon is applied to
        each part (:mod:`tts_container.text.pronunciation`). ``listener`` is who plays the audio (default: a
        listener of its own), ``received_at`` when the request arrived (its clock's time; default now):
        every engine call is due when that listener needs its audio, and every piece's audio and engine
        time feed the capacity estimate.
        """
        listener = ListenerClock() if listener is None else listener
        arrived = listener.clock() if received_at is None else received_at
        heard = _Delivery(listener, arrived, request.sample_rate)
        parts = spoken_parts(request.text)
        serving = self.calibrator.serving(request.voice) if self.calibrator else contextlib.nullcontext()
        with serving:
            joiner = SegmentJoiner(request.sample_rate)
            for index, part in enumerate(parts):
                if isinstance(part, Pause):
                    for frame in split_frames(heard.made(joiner.segment(_silence(part.seconds)))):
                        yield frame
                    continue
                context = Context(
                    _context_text(request.previous_text, request) if index == 0 else None,
                    _context_text(request.next_text, request) if index == len(parts) - 1 else None,
                )
                text = apply_lexicon(part, request.lexicon)
                part_frames = self._frames(request, text, context, joiner, words, heard)
                async with contextlib.aclosing(part_frames) as frames:
                    async for frame in frames:
                        yield frame
            for frame in split_frames(heard.made(joiner.finish())):
                yield frame

    async def _frames(
        self,
        request: SynthesizeRequest,
        text: str,
        context: Context,
        joiner: SegmentJoiner,
        words: list[Word] | None,
        heard: _Delivery,
    ) -> AsyncGenerator[bytes]:
        """The frames of one part of a request (all of it, unless pauses cut it in parts)."""
        start = functools.partial(
            self.engine.segments,
            text,
            voice=request.voice,
            speed=request.speed,
            lang=request_lang(request.lang, request.voice),
            context=context,
        )
        with self.pool.rendering():
            async with contextlib.aclosing(self._rendered(start, request, joiner, words, heard)) as frames:
                async for frame in frames:
                    yield frame

    async def _rendered(
        self,
        start: Callable[[], Iterator[Segment | Audio]],
        request: SynthesizeRequest,
        joiner: SegmentJoiner,
        words: list[Word] | None,
        heard: _Delivery,
    ) -> AsyncGenerator[bytes]:
        """The engine's pieces, one pool call each, as frames."""
        # Even starting the iterator goes through the pool: an engine may phonemize eagerly.
        segments, share = await self.pool.run_measured(lambda: iter(start()), deadline=heard.due())
        self.capacity.record(0.0, share.engine_s, share.lanes, share.peak)
        try:
            while True:
                segment, share = await self.pool.run_measured(
                    functools.partial(next, segments, None), deadline=heard.due()
                )
                if segment is None:
                    break
                pcm = joiner.segment(segment)
                audio_s = audio_ms(len(pcm), request.sample_rate) / 1000
                self.capacity.record(audio_s, share.engine_s, share.lanes, share.peak)
                if words is not None:
                    words.extend(joiner.words)
                for frame in split_frames(heard.made(pcm)):
                    yield frame
        finally:
            close = getattr(segments, "close", None)
            if close is not None:
                close()


@dataclass(slots=True)
class _Delivery:
    """One request's audio on its way to its listener: when its next engine call is due, and what
    each piece of audio means to the listener's clock (its first audio, or a stall)."""

    listener: ListenerClock
    arrived: float
    sample_rate: int
    started: bool = False  # some of its audio was made

    def due(self) -> float:
        return self.listener.deadline(self.arrived, started=self.started)

    def made(self, pcm: bytes) -> bytes:
        if pcm:
            self.listener.made(
                audio_ms(len(pcm), self.sample_rate) / 1000, self.arrived, started=self.started
            )
            self.started = True
        return pcm


def _context_text(text: str | None, request: SynthesizeRequest) -> str | None:
    """A context text as the engine gets it: without pauses, the request's lexicon applied."""
    cleaned = without_pauses(text)
    return apply_lexicon(cleaned, request.lexicon) if cleaned and cleaned.strip() else None


def _silence(seconds: float) -> Segment:
    """A pause as a segment of silence that the joiner keeps whole (no lead trimmed, no tail added)."""
    samples = np.zeros(round(seconds * NATIVE_SAMPLE_RATE), dtype=np.float32)
    return Segment(samples, lead="exact", ending="continues")
