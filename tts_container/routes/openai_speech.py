"""OpenAI's speech API on the model server: ``POST /v1/audio/speech``, ``GET /v1/audio/voices``, models.

OpenAI's SDK, Open WebUI and LiveKit's and Pipecat's OpenAI TTS plugins use this server unchanged
(``base_url="http://host:8080/v1"``). OpenAI's fields (``input``, ``voice`` incl. mixes and OpenAI's
names with a Kokoro namesake, ``model``, ``response_format``, ``speed`` 0.5-2.0, ``stream_format``,
``instructions`` accepted and unused) plus ``lexicon`` and ``lang_code`` map onto a ``synthesize``
request that goes where ``POST /invocations`` goes (:func:`tts_container.routes.invocations.open_audio`:
same checks, queue and engine); audio is encoded as rendered, and a hang-up stops the engine at its next
segment. Errors have OpenAI's shape with this server's codes (docs/openai-api.md).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from strands_kokoro.audio_encoding import new_encoder
from strands_kokoro.protocol import (
    DEFAULT_SAMPLE_RATE,
    DEFAULT_VOICE,
    ErrorCode,
    ProtocolError,
    ServerError,
    json_text,
    json_type,
    parse_json_object,
    parse_synthesize_fields,
    shown,
)
from tts_container.reporting.counters import SessionCounters
from tts_container.routes.invocations import (
    BodyClosingResponse,
    RequestAudio,
    encoded,
    header_value,
    open_audio,
    retry_after,
    status_of,
)
from tts_container.routes.post_body import model_unavailable, read_post
from tts_container.scheduling.admission import Admission
from tts_container.synthesis.synthesizer import Synthesizer
from tts_container.text.g2p import dialect_for

logger = logging.getLogger(__name__)

PREFIX = "/v1/"
SPEECH_PATH = "/v1/audio/speech"
VOICES_PATH = "/v1/audio/voices"
MODELS_PATH = "/v1/models"

MODEL_ID = "kokoro"
# Every model name accepted: this one model under OpenAI's names too, so clients configured for OpenAI work.
MODEL_IDS = (MODEL_ID, "tts-1", "tts-1-hd", "gpt-4o-mini-tts")
MODEL_CREATED = 1735689600  # 2025-01-01: Kokoro-82M v1.0's release, a fixed date for ``created``
# OpenAI's voices that Kokoro has a namesake of (OpenAI's other voices have none: they are unknown here).
OPENAI_VOICES = {
    "alloy": "af_alloy",
    "echo": "am_echo",
    "fable": "bm_fable",
    "nova": "af_nova",
    "onyx": "am_onyx",
}

SpeechFormat = Literal["mp3", "opus", "aac", "flac", "wav", "pcm"]
SPEECH_FORMATS: tuple[SpeechFormat, ...] = get_args(SpeechFormat)
DEFAULT_FORMAT: SpeechFormat = "mp3"
MEDIA_TYPES: dict[SpeechFormat, str] = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg; codecs=opus",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
StreamFormat = Literal["audio", "sse"]
STREAM_FORMATS: tuple[StreamFormat, ...] = get_args(StreamFormat)

# The request field a code is about, in OpenAI's names (``param`` of the error).
_PARAMS: dict[str, str] = {
    ErrorCode.MISSING_TEXT: "input",
    ErrorCode.TEXT_TOO_LONG: "input",
    ErrorCode.NOTHING_TO_SAY: "input",
    ErrorCode.UNSUPPORTED_SCRIPT: "input",
    ErrorCode.UNKNOWN_VOICE: "voice",
    ErrorCode.BAD_VOICE: "voice",
    ErrorCode.BAD_SPEED: "speed",
    ErrorCode.BAD_FORMAT: "response_format",
    ErrorCode.FORMAT_UNAVAILABLE: "response_format",
    ErrorCode.BAD_LEXICON: "lexicon",
    ErrorCode.UNSUPPORTED_LANG: "lang_code",
}
# Our field names as OpenAI's request calls them, for messages written about our fields.
_FIELD_NAMES = {"'text'": "'input'", "'lang'": "'lang_code'"}
UNKNOWN_MODEL = "model_not_found"


class OpenAIRequestError(Exception):
    """A request refused before any audio: its code, message and the field it is about."""

    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.param = code, message, param


def error_type(status: int) -> str:
    """OpenAI's error ``type`` for a status: the caller's mistake, a rate limit, or the server's fault."""
    if status == 429:
        return "rate_limit_error"
    return "server_error" if status >= 500 else "invalid_request_error"


def error_body(code: str, message: str, param: str | None = None, *, status: int | None = None) -> bytes:
    """OpenAI's error object, as bytes (the local-caller guard answers with it on these paths too)."""
    status = status_of(code) if status is None else status
    for ours, theirs in _FIELD_NAMES.items():
        message = message.replace(ours, theirs)
    error = {"message": message, "type": error_type(status), "param": param, "code": code}
    return json_text({"error": error}).encode("utf-8")


def error_response(
    code: str,
    message: str,
    param: str | None = None,
    *,
    status: int | None = None,
    retry_after_ms: int | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """A refusal in OpenAI's shape, with this server's status for ``code`` unless ``status`` is given."""
    status = status_of(code) if status is None else status
    all_headers = retry_after(retry_after_ms) | (headers or {})
    body = error_body(code, message, param if param is not None else _PARAMS.get(code), status=status)
    return Response(body, status_code=status, media_type="application/json", headers=all_headers)


def refusal_response(refused: ServerError) -> Response:
    """A coded refusal of the shared admission path, in OpenAI's shape."""
    return error_response(refused.code, refused.message, retry_after_ms=refused.retry_after_ms)


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    """``POST /v1/audio/speech`` read: the request for the engine and how to send its audio."""

    fields: dict[str, Any]
    response_format: SpeechFormat
    stream_format: StreamFormat


def parse_speech(body: bytes) -> SpeechRequest:
    """Read OpenAI's request body (see the module docstring), or :class:`OpenAIRequestError`."""
    try:
        obj = parse_json_object(body)  # the protocol's own rules: the same codes as every route
    except ProtocolError as exc:
        raise OpenAIRequestError(exc.code, exc.message) from None
    model = obj.get("model", MODEL_ID)
    if model not in MODEL_IDS:
        raise OpenAIRequestError(
            UNKNOWN_MODEL, f"unknown model {shown(model)}; this server has {', '.join(MODEL_IDS)}", "model"
        )
    fmt = _choice(obj, "response_format", SPEECH_FORMATS, DEFAULT_FORMAT, ErrorCode.BAD_FORMAT)
    stream = _choice(obj, "stream_format", STREAM_FORMATS, "audio", ErrorCode.BAD_FORMAT)
    for name in ("instructions", "input", "voice", "lang_code"):
        if obj.get(name) is not None and not isinstance(obj[name], str):
            code = ErrorCode.BAD_VOICE if name == "voice" else ErrorCode.BAD_MESSAGE
            raise OpenAIRequestError(code, f"'{name}' must be a string, got {json_type(obj[name])}", name)
    voice = obj.get("voice") or DEFAULT_VOICE
    fields = {
        "text": obj.get("input"),
        "voice": OPENAI_VOICES.get(voice, voice),
        "speed": obj.get("speed"),
        "lang": obj.get("lang_code"),
        "lexicon": obj.get("lexicon"),
        "sample_rate": DEFAULT_SAMPLE_RATE,
    }
    return SpeechRequest(fields, fmt, stream)


def _choice[T: str](obj: dict[str, Any], name: str, allowed: tuple[T, ...], default: T, code: str) -> T:
    value = obj.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or value not in allowed:
        raise OpenAIRequestError(
            code, f"'{name}' must be one of {', '.join(allowed)}, got {shown(value)}", name
        )
    return value


async def speech(
    request: Request,
    synthesizer: Synthesizer | None,
    admission: Admission | None,
    counters: SessionCounters,
    *,
    load_failed: bool,
) -> Response:
    """``POST /v1/audio/speech``: ``input``'s audio, streamed in ``response_format`` as it is rendered."""
    if synthesizer is None or admission is None:
        return error_response(*model_unavailable(load_failed))
    if isinstance(body := await read_post(request, refuse=error_response), Response):
        return body
    try:
        asked = parse_speech(body)
        synth = parse_synthesize_fields(asked.fields)
    except OpenAIRequestError as exc:
        return error_response(exc.code, exc.message, exc.param)
    except ProtocolError as exc:
        return error_response(exc.code, exc.message)
    fmt = asked.response_format
    audio = await open_audio(synthesizer, admission, synth, counters, route="openai", audio_format=fmt)
    if isinstance(audio, ServerError):
        return refusal_response(audio)
    headers = {"X-Request-Id": header_value(str(audio.request.request_id))}
    if asked.stream_format == "sse":
        headers["Cache-Control"] = "no-cache"
        body_stream = _sse(audio, asked.response_format)
        return BodyClosingResponse(body_stream, media_type="text/event-stream", headers=headers)
    stream = encoded(audio, new_encoder(asked.response_format, audio.request.sample_rate))
    return BodyClosingResponse(stream, media_type=MEDIA_TYPES[asked.response_format], headers=headers)


async def _sse(audio: RequestAudio, fmt: SpeechFormat) -> AsyncGenerator[bytes]:
    """OpenAI's ``stream_format: "sse"``: ``speech.audio.delta`` events of base64 audio in ``fmt``, then
    ``speech.audio.done`` (or an ``error`` event if the engine failed after the first audio)."""
    stream = encoded(audio, new_encoder(fmt, audio.request.sample_rate))
    try:
        async for payload in stream:
            delta = {"type": "speech.audio.delta", "audio": base64.b64encode(payload).decode("ascii")}
            yield _event(delta)
    except Exception:
        logger.exception("engine failed after the first audio of a speech request (sse)")
        failed = {"type": "error", "error": {"message": "synthesis failed", "code": ErrorCode.ENGINE_FAILED}}
        yield _event(failed)
        return
    words = len(audio.request.text.split())
    usage = {"input_tokens": words, "output_tokens": 0, "total_tokens": words}
    yield _event({"type": "speech.audio.done", "usage": usage})


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + json_text(obj).encode("utf-8") + b"\n\n"


def voices(synthesizer: Synthesizer | None, load_failed: bool) -> Response:
    """``GET /v1/audio/voices``: Kokoro-FastAPI's answer (``voices``: every name), and each one's language."""
    if synthesizer is None:
        return error_response(*model_unavailable(load_failed))
    names = sorted(synthesizer.engine.voices)
    listed = [{"id": name, "name": name, "lang": dialect_for(None, name)} for name in names]
    return JSONResponse({"voices": names, "data": listed, "default": DEFAULT_VOICE, "aliases": OPENAI_VOICES})


def models() -> Response:
    """``GET /v1/models``: the one model, under each name it answers to."""
    data = [
        {"id": name, "object": "model", "created": MODEL_CREATED, "owned_by": "hexgrad"} for name in MODEL_IDS
    ]
    return JSONResponse({"object": "list", "data": data})


def model(name: str) -> Response:
    """``GET /v1/models/{model}``."""
    if name not in MODEL_IDS:
        return error_response(UNKNOWN_MODEL, f"unknown model {shown(name)}", "model", status=404)
    return JSONResponse({"id": name, "object": "model", "created": MODEL_CREATED, "owned_by": "hexgrad"})


ServerView = tuple[Synthesizer | None, Admission | None, SessionCounters, bool]


def routes(state: Callable[[], ServerView]) -> list[Route]:
    """The routes, reading the server's state (synthesizer, admission, counters, whether loading
    failed) per call."""

    async def post_speech(request: Request) -> Response:
        synthesizer, admission, counters, failed = state()
        return await speech(request, synthesizer, admission, counters, load_failed=failed)

    async def get_voices(_: Request) -> Response:
        synthesizer, _admission, _counters, failed = state()
        return voices(synthesizer, failed)

    async def get_models(_: Request) -> Response:
        return models()

    async def get_model(request: Request) -> Response:
        return model(str(request.path_params["model"]))

    return [
        Route(SPEECH_PATH, post_speech, methods=["POST"]),
        Route(VOICES_PATH, get_voices, methods=["GET"]),
        Route(MODELS_PATH, get_models, methods=["GET"]),
        Route(MODELS_PATH + "/{model:path}", get_model, methods=["GET"]),
    ]
