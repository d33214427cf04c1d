"""Validate an invocation payload before any model or speech session is touched.

Why a separate step: the AgentCore SDK hands the entrypoint whatever JSON the caller sent. A bad field
must become ONE coded ``error`` event (architecture §4) that a client can switch on, never a stack trace or a
half-started turn that already opened a speech session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentcore_app.errors import AppErrorCode, TurnRefused
from strands_kokoro.audio_encoding import encoder_available
from strands_kokoro.protocol import (
    AudioFormatName,
    ProtocolError,
    is_voice_mix,
    json_type,
    parse_audio_format,
    parse_speed,
    parse_voice,
    utf8_encodable,
)
from strands_kokoro.speech_options import SPEECH_MODES, SpeechMode

MAX_PROMPT_CHARS = 4_000
MAX_VOICE_CHARS = 64


@dataclass(frozen=True, slots=True)
class Turn:
    """One validated request: what to ask the agent and how to speak the answer."""

    prompt: str
    mode: SpeechMode = "bidi"
    voice: str | None = None
    speed: float | None = None
    format: AudioFormatName = "pcm"


def parse_turn(payload: Any) -> Turn:
    """``{prompt, mode?, voice?, speed?, format?}`` -> :class:`Turn`, or raise :class:`TurnRefused`.

    ``format``: the audio of the turn's ``audio_chunk`` events, ``pcm`` (the default: what every client
    before it got), ``opus`` or ``mp3``; ``format_unavailable`` where this app cannot encode it.
    """
    if not isinstance(payload, dict):
        raise TurnRefused(
            AppErrorCode.BAD_PAYLOAD, f"payload must be a JSON object, got {json_type(payload)}"
        )
    if not utf8_encodable(payload):  # "\ud800" is valid JSON, and no UTF-8 (nor the LLM) can carry it
        raise TurnRefused(
            AppErrorCode.BAD_UTF8, "the payload has a lone surrogate (\\ud800-\\udfff) in a string"
        )
    prompt = payload.get("prompt")
    if prompt is None:
        raise TurnRefused(AppErrorCode.MISSING_PROMPT, "'prompt' is required")
    if not isinstance(prompt, str):
        raise TurnRefused(AppErrorCode.BAD_PAYLOAD, "'prompt' must be a string")
    if not prompt.strip():
        raise TurnRefused(AppErrorCode.MISSING_PROMPT, "'prompt' is empty")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise TurnRefused(
            AppErrorCode.PROMPT_TOO_LONG,
            f"'prompt' has {len(prompt)} characters; the limit is {MAX_PROMPT_CHARS}",
        )
    mode = payload.get("mode", "bidi")
    if mode is None:
        mode = "bidi"
    if not isinstance(mode, str) or mode not in SPEECH_MODES:
        shown = repr(mode[:32]) if isinstance(mode, str) else json_type(mode)
        raise TurnRefused(AppErrorCode.UNKNOWN_MODE, f"'mode' must be 'bidi' or 'batch', got {shown}")
    voice, speed = parse_speech_choice(payload)
    try:
        audio_format = parse_audio_format(payload.get("format"))
    except ProtocolError as refused:
        raise TurnRefused(refused.code, refused.message) from None
    if not encoder_available(audio_format):
        raise TurnRefused(
            AppErrorCode.FORMAT_UNAVAILABLE, f"this app cannot encode {audio_format!r} (PyAV is missing)"
        )
    return Turn(prompt=prompt, mode=mode, voice=voice, speed=speed, format=audio_format)


def parse_speech_choice(payload: Mapping[str, Any]) -> tuple[str | None, float | None]:
    """A request's ``voice`` and ``speed`` (None: the default), or raise :class:`TurnRefused`."""
    voice = payload.get("voice")
    if voice is not None and (not isinstance(voice, str) or not voice or len(voice) > MAX_VOICE_CHARS):
        raise TurnRefused(
            AppErrorCode.BAD_VOICE, f"'voice' must be a voice name of 1-{MAX_VOICE_CHARS} characters"
        )
    if voice is not None and is_voice_mix(voice):
        try:
            parse_voice(voice)
        except ProtocolError as exc:
            raise TurnRefused(AppErrorCode.BAD_VOICE, exc.message) from None
    try:
        speed = None if payload.get("speed") is None else parse_speed(payload["speed"])
    except ProtocolError as refused:
        raise TurnRefused(refused.code, refused.message) from None
    return voice, speed
