"""POST /invocations: one whole text in, audio streamed back as the engine produces it.

Three response formats (DESIGN §3): ``pcm`` (raw s16le), ``wav`` (a streaming header whose sizes are
unknown, written 0xFFFFFFFF as streaming WAV writers do, then raw PCM) and ``sse`` (base64 audio in
``data: {json}\\n\\n`` events for browser pipelines). Validation errors are answered before any audio
with the same coded error frame the WebSocket session sends.
"""

from __future__ import annotations

import io
import json
import logging
import struct
import time
import uuid
import wave
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from strands_kokoro.protocol import (
    CHANNELS,
    MAX_MESSAGE_BYTES,
    SAMPLE_WIDTH_BYTES,
    ErrorCode,
    ProtocolError,
    SynthesizeRequest,
    audio_ms,
    error_frame,
    parse_invocation_request,
    sse_audio_event,
    sse_event,
    synthesis_complete,
    synthesis_start,
)
from tts_container.synthesis import Synthesizer

logger = logging.getLogger(__name__)

_STATUS = {ErrorCode.MESSAGE_TOO_LARGE: 413, ErrorCode.NOT_READY: 503, ErrorCode.OVERLOADED: 429}
_UNKNOWN_SIZE = 0xFFFFFFFF


def error_response(code: ErrorCode, message: str, request_id: str | None = None) -> JSONResponse:
    return JSONResponse(
        json.loads(error_frame(code, message, request_id)), status_code=_STATUS.get(code, 400)
    )


async def invocations(request: Request, synthesizer: Synthesizer | None) -> Response:
    """Validate the body, then stream the audio in the requested format."""
    if synthesizer is None:
        return error_response(
            ErrorCode.NOT_READY, "the model is still loading; retry after /ping answers 200"
        )
    body = await _read_body(request)
    try:
        invocation = parse_invocation_request(body)
    except ProtocolError as exc:
        return error_response(exc.code, exc.message, exc.request_id)
    synth = invocation.synthesize
    if synth.voice not in synthesizer.engine.voices:
        return error_response(
            ErrorCode.UNKNOWN_VOICE, f"unknown voice {synth.voice[:64]!r}", synth.request_id
        )
    synth = replace(synth, request_id=synth.request_id or uuid.uuid4().hex)
    headers = {"X-Request-Id": str(synth.request_id), "X-Sample-Rate": str(synth.sample_rate)}
    if invocation.format == "wav":
        return StreamingResponse(_wav(synthesizer, synth), media_type="audio/wav", headers=headers)
    if invocation.format == "sse":
        headers["Cache-Control"] = "no-cache"
        return StreamingResponse(_sse(synthesizer, synth), media_type="text/event-stream", headers=headers)
    headers["X-Audio-Format"] = "pcm_s16le"
    return StreamingResponse(_pcm(synthesizer, synth), media_type="application/octet-stream", headers=headers)


async def _read_body(request: Request) -> bytes:
    """Read at most one byte past the limit, so an oversized body is refused without buffering it."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_MESSAGE_BYTES:
            break
    return bytes(body)


def wav_header(sample_rate: int) -> bytes:
    """A WAV header for a stream of unknown length: ``wave`` writes it, sizes patched to 0xFFFFFFFF."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(CHANNELS)
        writer.setsampwidth(SAMPLE_WIDTH_BYTES)
        writer.setframerate(sample_rate)
        writer.writeframes(b"")
    header = bytearray(buffer.getvalue())
    struct.pack_into("<I", header, 4, _UNKNOWN_SIZE)  # RIFF chunk size
    struct.pack_into("<I", header, len(header) - 4, _UNKNOWN_SIZE)  # data chunk size
    return bytes(header)


async def _pcm(synthesizer: Synthesizer, request: SynthesizeRequest) -> AsyncIterator[bytes]:
    async with aclosing(synthesizer.pcm_frames(request)) as frames:
        try:
            async for frame in frames:
                yield frame
        except Exception:  # the status line is gone already: log and end the stream early
            logger.exception("engine failed on request %s", request.request_id)


async def _wav(synthesizer: Synthesizer, request: SynthesizeRequest) -> AsyncIterator[bytes]:
    yield wav_header(request.sample_rate)
    async for frame in _pcm(synthesizer, request):
        yield frame


async def _sse(synthesizer: Synthesizer, request: SynthesizeRequest) -> AsyncIterator[bytes]:
    request_id = str(request.request_id)
    started = time.perf_counter()
    yield sse_event(json.loads(synthesis_start(request_id, request.sample_rate)))
    first_audio_ms: float | None = None
    n_bytes = seq = 0
    async with aclosing(synthesizer.pcm_frames(request)) as frames:
        try:
            async for frame in frames:
                if first_audio_ms is None:
                    first_audio_ms = (time.perf_counter() - started) * 1000
                n_bytes += len(frame)
                yield sse_audio_event(request_id, seq, frame, request.sample_rate)
                seq += 1
        except Exception:
            logger.exception("engine failed on request %s", request_id)
            yield sse_event(json.loads(error_frame(ErrorCode.ENGINE_FAILED, "synthesis failed", request_id)))
            return
    complete = synthesis_complete(
        request_id,
        audio_ms=audio_ms(n_bytes, request.sample_rate),
        chunks=seq,
        first_audio_ms=first_audio_ms,
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )
    yield sse_event(json.loads(complete))
