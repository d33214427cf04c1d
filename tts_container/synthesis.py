"""One request's audio as an async stream of PCM frames, shared by the WebSocket session and POST.

Why an async generator that pulls segment by segment: the first frame leaves as soon as the engine's
first segment is ready (not after the whole text), and a consumer that stops iterating (a ``cancel``,
a disconnect) stops the engine at the next segment boundary. ``aclose()`` (use
``contextlib.aclosing``) closes the engine's iterator so nothing of the request stays behind.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

from strands_kokoro.protocol import (
    DEFAULT_VOICE,
    ErrorCode,
    ServerError,
    SynthesizeRequest,
    Word,
    audio_ms,
    shown,
)
from tts_container.admission import Capacity
from tts_container.audio import SegmentJoiner, split_frames
from tts_container.engines.base import Context, Engine
from tts_container.g2p import UnsupportedLanguage, dialect_for, request_lang
from tts_container.inference import InferencePool
from tts_container.listener import ListenerClock
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
    capacity: Capacity = field(default_factory=Capacity)

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
        self,
        request: SynthesizeRequest,
        words: list[Word] | None = None,
        *,
        listener: ListenerClock | None = None,
        received_at: float | None = None,
    ) -> AsyncGenerator[bytes]:
        """Yield s16le PCM frames at ``request.sample_rate``; raises what the engine raises.

        ``words`` (optional) receives when each word is heard, in ms of the audio yielded (after the
        joiner's trimming), segment by segment as their audio goes out. ``listener`` is who plays the
        audio (default: a listener of its own), ``received_at`` when the request arrived (its clock's
        time; default now): every engine call is due when that listener needs its audio, and every
        piece's audio and engine time feed the capacity estimate.
        """
        listener = ListenerClock() if listener is None else listener
        arrived = listener.clock() if received_at is None else received_at
        started = False
        rate = request.sample_rate

        async def engine_call[T](fn: Callable[[], T]) -> tuple[T, float]:
            due = listener.deadline(arrived, started=started)
            return await self.pool.run(functools.partial(_timed, fn), deadline=due)

        context = Context(request.previous_text, request.next_text)
        serving = self.calibrator.serving(request.voice) if self.calibrator else contextlib.nullcontext()
        with serving:
            # Even starting the iterator goes through the pool: an engine may phonemize eagerly.
            segments, engine_s = await engine_call(
                lambda: iter(
                    self.engine.segments(
                        request.text,
                        voice=request.voice,
                        speed=request.speed,
                        lang=request_lang(request.lang, request.voice),
                        context=context,
                        pace=ListenerPace(listener, self.pool, self.capacity),
                    )
                )
            )
            self.capacity.record(0.0, engine_s)
            joiner = SegmentJoiner(rate)
            try:
                while True:
                    segment, engine_s = await engine_call(functools.partial(next, segments, None))
                    pcm = joiner.finish() if segment is None else joiner.segment(segment)
                    seconds = audio_ms(len(pcm), rate) / 1000
                    self.capacity.record(seconds, engine_s)
                    if pcm:
                        listener.made(seconds, arrived, started=started)
                        started = True
                    if words is not None and segment is not None:
                        words.extend(joiner.words)
                    for frame in split_frames(pcm):
                        yield frame
                    if segment is None:
                        break
            finally:
                close = getattr(segments, "close", None)
                if close is not None:
                    close()


# The longest engine call a listener's pace affords: a listener who arrives meanwhile waits for it.
MAX_CALL_S = 0.6
# A call may cost at most this share of its listener's buffered audio.
BUFFER_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class ListenerPace:
    """How much audio one engine call may render for a listener (``Pace``): its cost at most
    :data:`BUFFER_SHARE` of what the listener has buffered, ending before any other waiting call is
    due, and no longer than :data:`MAX_CALL_S` (a listener arriving meanwhile still starts soon).
    Asked on the engine thread: it only reads floats the loop writes whole."""

    listener: ListenerClock
    pool: InferencePool
    capacity: Capacity

    def affordable_s(self) -> float:
        rate = self.capacity.audio_per_s
        dry_at = self.listener.dry_at
        if rate is None or dry_at is None:
            return 0.0
        now = self.listener.clock()
        engine_s = min(BUFFER_SHARE * (dry_at - now), self.pool.next_due - now, MAX_CALL_S)
        return max(0.0, engine_s * rate)


def _timed[T](fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and the seconds it took (on the engine thread: the engine's own time)."""
    began = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - began
