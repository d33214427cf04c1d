"""POST /invocations: one whole text in, audio streamed back as the engine produces it.

Formats (architecture §3): ``pcm``, ``wav`` (a streaming header, sizes 0xFFFFFFFF), ``sse`` (base64
audio in JSON events), ``opus`` and ``mp3`` (encoded as the PCM comes,
:mod:`strands_kokoro.audio_encoding`). A refusal comes before any audio, as the WebSocket's coded error
frame. A caller who hangs up, or stops reading past the reader deadline
(:class:`kokoro_serving.deadlines.ReaderDeadline`), is a barge-in: the body is cancelled, the engine
stops at its next segment, and the request counts as cancelled on ``/stats``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from strands_kokoro.audio_encoding import (
    AudioEncoder,
    new_encoder,
    wav_header,
)
from strands_kokoro.protocol import (
    WIRE_AUDIO_FORMATS,
    AudioData,
    ErrorCode,
    ProtocolError,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    Word,
    WordTimings,
    audio_ms,
    parse_invocation,
    sse_event,
)
from tts_container.reporting.counters import SessionCounters
from tts_container.reporting.metric_lines import log_completed
from tts_container.routes.post_body import model_unavailable, read_post
from tts_container.scheduling.admission import Admission, AudioFormat, enter
from tts_container.synthesis.synthesizer import Synthesizer
from tts_container.text.speakable import nothing_to_say

logger = logging.getLogger(__name__)

_STATUS = {
    ErrorCode.MESSAGE_TOO_LARGE: 413,
    ErrorCode.NOT_READY: 503,
    ErrorCode.OVERLOADED: 429,
    ErrorCode.ENGINE_FAILED: 500,
    ErrorCode.INTERNAL_ERROR: 500,
    ErrorCode.NOTHING_TO_SAY: 422,
    ErrorCode.UNSUPPORTED_SCRIPT: 422,
    ErrorCode.REQUEST_TIMEOUT: 408,
    ErrorCode.FORMAT_UNAVAILABLE: 501,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
}
_MEDIA_TYPES = {"opus": "audio/ogg; codecs=opus", "mp3": "audio/mpeg"}
_UNKNOWN_SIZE = 0xFFFFFFFF


def status_of(code: str) -> int:
    """The HTTP status a coded refusal is answered with (400 for a bad request not listed)."""
    return _STATUS.get(code, 400)  # type: ignore[call-overload]


def retry_after(retry_after_ms: int | None) -> dict[str, str]:
    """The ``Retry-After`` header (whole seconds, rounded up) of a refusal that may be retried later."""
    return {} if retry_after_ms is None else {"Retry-After": str(max(1, -(-retry_after_ms // 1000)))}


def error_response(
    code: ErrorCode, message: str, request_id: str | None = None, retry_after_ms: int | None = None
) -> JSONResponse:
    frame = ServerError(request_id, code, message, retry_after_ms)
    return JSONResponse(frame.to_dict(), status_code=status_of(code), headers=retry_after(retry_after_ms))


async def invocations(
    request: Request,
    synthesizer: Synthesizer | None,
    admission: Admission | None,
    counters: SessionCounters,
    *,
    load_failed: bool,
) -> Response:
    """Validate the body, synthesize the first audio, then stream the rest in the requested format.

    Why the first audio comes before the status line: once a 200 is sent, a failure can no longer say
    so in ``pcm`` or ``wav``. Whatever the engine cannot speak at all fails on its first segment, so it
    gets a coded error instead of an empty 200. A failure after that ends the response without its
    final chunk: every HTTP client sees a broken body, never a silent success (``sse`` also says so
    in a coded ``error`` event first).
    """
    if synthesizer is None or admission is None:
        return error_response(*model_unavailable(load_failed))
    if isinstance(body := await read_post(request, refuse=error_response), Response):
        return body
    try:
        invocation = parse_invocation(body)
    except ProtocolError as exc:
        return error_response(exc.code, exc.message, exc.request_id)
    asked = invocation.request
    audio = await open_audio(
        synthesizer, admission, asked, counters, route="invocations", audio_format=asked.format
    )
    if isinstance(audio, ServerError):
        return error_response(ErrorCode(audio.code), audio.message, audio.request_id, audio.retry_after_ms)
    synth = audio.request
    headers = {"X-Request-Id": header_value(str(synth.request_id)), "X-Sample-Rate": str(synth.sample_rate)}
    if invocation.format == "wav":
        return BodyClosingResponse(_wav(audio), media_type="audio/wav", headers=headers)
    if invocation.format == "sse":
        headers["Cache-Control"] = "no-cache"
        return BodyClosingResponse(_sse(audio), media_type="text/event-stream", headers=headers)
    if invocation.format in _MEDIA_TYPES:
        headers["X-Audio-Format"] = WIRE_AUDIO_FORMATS[synth.format]
        media_type = _MEDIA_TYPES[invocation.format]
        return BodyClosingResponse(_encoded(audio), media_type=media_type, headers=headers)
    headers["X-Audio-Format"] = "pcm_s16le"
    return BodyClosingResponse(_pcm(audio), media_type="application/octet-stream", headers=headers)


async def open_audio(
    synthesizer: Synthesizer,
    admission: Admission,
    request: SynthesizeRequest,
    counters: SessionCounters,
    *,
    route: str,
    audio_format: AudioFormat,
) -> RequestAudio | ServerError:
    """Admit ``request`` and synthesize its first frame: the one path every HTTP route takes into the
    engine (this route and OpenAI's ``/v1/audio/speech``), checked in the order every route checks
    (:mod:`tts_container.scheduling.admission`; ``audio_format``: the format the route sends).

    A POST is one listener for as long as its response lasts: a new answer, refused ``overloaded`` when
    the server is full (:mod:`tts_container.scheduling.admission`). A refusal, an engine that fails before any
    audio, or no audio at all is the coded error to answer before the status line; otherwise the
    request's audio, its first frame in hand, for a body to stream.
    """
    listener = admission.listener()
    leave = functools.partial(admission.leave, listener)
    try:
        synth = enter(synthesizer, admission, listener, request, audio_format=audio_format, entry=_with_id)
    except BaseException:  # a fault of the server's own: the listener's place is given up all the same
        leave()
        raise
    if isinstance(synth, ServerError):
        leave()
        return synth
    started = time.perf_counter()
    words: list[Word] = []
    frames = synthesizer.pcm_frames(synth, words, listener=listener, received_at=started)
    try:
        first = await anext(frames, b"")
    except Exception:
        await frames.aclose()
        leave()
        logger.exception("engine failed before the first audio of a POST of %d characters", len(synth.text))
        return ServerError(synth.request_id, ErrorCode.ENGINE_FAILED, "synthesis failed on the server")
    if not first:  # no audio at all: the G2P had no sound for the text ("$" alone)
        await frames.aclose()
        leave()
        return nothing_to_say(synth.request_id)
    return RequestAudio(synth, frames, first, started, words, counters, route, leave)


def _with_id(request: SynthesizeRequest) -> SynthesizeRequest:
    """A POST's request with an id of its own when its caller gave none (it names the stream's logs)."""
    return replace(request, request_id=request.request_id or uuid.uuid4().hex)


class BodyClosingResponse(StreamingResponse):
    """A ``StreamingResponse`` that closes its body generator when the response ends, however it ends.

    Why: when a ``send`` fails (the caller went away, or stopped reading, mid-write) Starlette leaves the
    body suspended at its ``yield``; the request's synthesis would be released, and counted as
    cancelled, only whenever the garbage collector finds it.
    """

    def __init__(self, body: AsyncGenerator[bytes], **options: Any) -> None:
        super().__init__(body, **options)
        self._body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._body.aclose()


def header_value(text: str) -> str:
    """``text`` as an HTTP header value: printable ASCII as is, anything else (a newline, a non-Latin-1
    character a client put in its request id) percent-encoded as UTF-8, so the header can always be sent."""
    return "".join(
        char
        if " " <= char <= "~" and char != "%"
        else "".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))
        for char in text
    )


class EngineFailedMidStream(Exception):
    """Raised out of a pcm/wav body so the server ends the response without its final chunk."""


@dataclass(slots=True)
class RequestAudio:
    """One request's audio stream whose first frame was already synthesized; counts what it yields."""

    request: SynthesizeRequest
    frames: AsyncGenerator[bytes]
    first: bytes
    started: float
    words: list[Word]
    counters: SessionCounters
    route: str
    leave: Callable[[], None]  # the listener's place at the server, given up when the stream ends
    n_bytes: int = 0
    chunks: int = 0
    first_audio_ms: float | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async with aclosing(self.frames):
                frame: bytes | None = self.first
                while frame is not None:
                    made_ms = audio_ms(len(frame), self.request.sample_rate)
                    self.counters.audio_made_ms += made_ms
                    yield self._count(frame)
                    self.counters.audio_sent_ms += made_ms  # asked for the next: this one went out
                    frame = await anext(self.frames, None)
        except (asyncio.CancelledError, GeneratorExit):
            self.counters.requests_cancelled += 1  # the client hung up: the body was cancelled
            raise
        finally:
            self.leave()
        self.counters.requests_completed += 1
        log_completed(self.completed(), route=self.route)

    def _count(self, frame: bytes) -> bytes:
        if self.first_audio_ms is None:
            self.first_audio_ms = (time.perf_counter() - self.started) * 1000
        self.n_bytes += len(frame)
        self.chunks += 1
        return frame

    def completed(self) -> SynthesisCompleted:
        return SynthesisCompleted(
            str(self.request.request_id),
            audio_ms=audio_ms(self.n_bytes, self.request.sample_rate),
            chunks=self.chunks,
            first_audio_ms=self.first_audio_ms,
            elapsed_ms=(time.perf_counter() - self.started) * 1000,
            words=tuple(self.words),
        )


async def _pcm(audio: RequestAudio) -> AsyncGenerator[bytes]:
    try:
        async for frame in audio:
            yield frame
    except Exception as exc:
        raise EngineFailedMidStream("synthesis failed after the first audio; the body ends early") from exc


async def _encoded(audio: RequestAudio) -> AsyncGenerator[bytes]:
    """The request's compressed stream (its ``format``)."""
    async for payload in encoded(audio, new_encoder(audio.request.format, audio.request.sample_rate)):
        yield payload


async def encoded(audio: RequestAudio, encoder: AudioEncoder) -> AsyncGenerator[bytes]:
    """The request's audio through ``encoder``: each segment's bytes as soon as the codec has them."""
    async for frame in _pcm(audio):
        if payload := encoder.encode(frame):
            yield payload
    if tail := encoder.finish():
        yield tail


async def _wav(audio: RequestAudio) -> AsyncGenerator[bytes]:
    yield wav_header(audio.request.sample_rate)
    async for frame in _pcm(audio):
        yield frame


async def _sse(audio: RequestAudio) -> AsyncGenerator[bytes]:
    request_id = str(audio.request.request_id)
    rate = audio.request.sample_rate
    yield sse_event(SynthesisStarted(request_id, rate).to_dict())
    words_sent = 0
    try:
        async for frame in audio:
            if len(audio.words) > words_sent:  # as on the WebSocket: timed words before their audio
                yield sse_event(WordTimings(request_id, tuple(audio.words[words_sent:])).to_dict())
                words_sent = len(audio.words)
            yield sse_event(AudioData(request_id, frame).to_dict(seq=audio.chunks - 1, sample_rate=rate))
    except Exception:
        logger.exception("engine failed after the first audio of a POST (sse)")
        yield sse_event(ServerError(request_id, ErrorCode.ENGINE_FAILED, "synthesis failed").to_dict())
        return
    yield sse_event(audio.completed().to_dict())
