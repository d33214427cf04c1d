"""The audio events of an agent turn (architecture §4): plain, JSON-serialisable dicts with a ``type``.

These are what ``KokoroSpeech`` yields and what the AgentCore entrypoint puts on its SSE stream. They
are built here, in one place, so the field names (which follow Strands' own bidi audio events) cannot
drift between producers; each has a ``TypedDict`` so mypy checks producers and consumers alike (a
consumer narrows on ``event["type"]``). Strands' raw ``stream_async`` dicts never appear: they carry the
agent object.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Literal, TypedDict, cast

from strands_kokoro.protocol import AUDIO_FORMAT, CHANNELS, Word


class AgentStart(TypedDict):
    type: Literal["agent_start"]
    request_id: str
    mode: str


class TextDelta(TypedDict):
    type: Literal["text_delta"]
    seq: int
    text: str


class AudioChunk(TypedDict):
    type: Literal["audio_chunk"]
    seq: int
    sentence: int
    audio: str
    format: str
    sample_rate: int
    channels: int


class WordTiming(TypedDict):
    text: str
    start_ms: float
    end_ms: float


class WordTimings(TypedDict):
    type: Literal["word_timings"]
    sentence: int
    words: list[WordTiming]


class SentenceComplete(TypedDict):
    type: Literal["sentence_complete"]
    sentence: int
    text: str
    audio_ms: float
    first_audio_ms: float | None
    predicted_buffer_ms: float | None
    buffer_ms: float | None
    words: list[WordTiming]
    filler: bool


class SpeechError(TypedDict):
    type: Literal["speech_error"]
    code: str
    message: str


class SpeechInterrupted(TypedDict):
    type: Literal["speech_interrupted"]
    dropped: int
    at_ms: float


class AgentEnd(TypedDict):
    type: Literal["agent_end"]
    request_id: str
    mode: str
    first_text_ms: float | None
    first_audio_ms: float | None
    total_ms: float
    audio_ms: float
    chunks: int
    requests: int
    rtf: float | None
    stall_ms: float


class ErrorEvent(TypedDict):
    type: Literal["error"]
    code: str
    message: str


Event = (
    AgentStart
    | TextDelta
    | AudioChunk
    | WordTimings
    | SentenceComplete
    | SpeechError
    | SpeechInterrupted
    | AgentEnd
    | ErrorEvent
)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def agent_start(request_id: str, mode: str) -> AgentStart:
    return {"type": "agent_start", "request_id": request_id, "mode": mode}


def text_delta(seq: int, text: str) -> TextDelta:
    return {"type": "text_delta", "seq": seq, "text": text}


def audio_chunk(
    seq: int, sentence: int, audio: bytes, sample_rate: int, audio_format: str = AUDIO_FORMAT
) -> AudioChunk:
    """One piece of a request's audio; base64 so the dict stays JSON (the +33% is the price of SSE).

    ``audio_format`` says what the bytes are: ``pcm_s16le``, or the next bytes of the turn's one
    compressed stream (``opus``: Ogg Opus, ``mp3``), so the ``audio`` of a turn's chunks, decoded from
    base64 and joined in ``seq`` order, is one playable file. ``sample_rate`` is the PCM's rate either way.
    """
    return {
        "type": "audio_chunk",
        "seq": seq,
        "sentence": sentence,
        "audio": base64.b64encode(audio).decode("ascii"),
        "format": audio_format,
        "sample_rate": sample_rate,
        "channels": CHANNELS,
    }


def _timings(words: Sequence[Word]) -> list[WordTiming]:
    return [cast(WordTiming, w.to_dict()) for w in words]  # as the wire has them


def word_timings(sentence: int, words: Sequence[Word]) -> WordTimings:
    """More words of request ``sentence`` timed (ms from its first ``audio_chunk``), out before the audio
    that holds them: captions can follow a request that is heard while it is still being synthesized.
    Each event carries only new words; ``sentence_complete`` repeats them all."""
    return {"type": "word_timings", "sentence": sentence, "words": _timings(words)}


def sentence_complete(
    sentence: int,
    text: str,
    audio_ms: float,
    first_audio_ms: float | None,
    *,
    predicted_buffer_ms: float | None = None,
    buffer_ms: float | None = None,
    words: Sequence[Word] = (),
    filler: bool = False,
) -> SentenceComplete:
    """One request fully spoken: a sentence, or the piece of one the pacer cut (``sentence`` numbers
    the turn's requests). ``first_audio_ms`` is relative to ``agent_start`` (None: no audio).

    ``words``: when each word is heard, in ms from the start of this request's audio (its first
    ``audio_chunk``), as the model timed it; empty when the server cannot tell. Captions follow it.

    ``predicted_buffer_ms``: the audio the pacer predicted the listener would have left when this
    request's audio arrived; ``buffer_ms``: what was left (negative: it came after a gap that long).
    Both None where not known (the first request, the batch baseline).

    ``filler``: the request was the tool filler ("One moment."), said while a tool ran, not words of
    the answer (a transcript or a caption may leave it out).
    """
    return {
        "type": "sentence_complete",
        "sentence": sentence,
        "text": text,
        "audio_ms": round(audio_ms, 1),
        "first_audio_ms": _ms(first_audio_ms),
        "predicted_buffer_ms": _ms(predicted_buffer_ms),
        "buffer_ms": _ms(buffer_ms),
        "words": _timings(words),
        "filler": filler,
    }


def speech_error(code: str, message: str) -> SpeechError:
    """Speech failed (in part); the text answer goes on."""
    return {"type": "speech_error", "code": code, "message": message}


def speech_interrupted(dropped: int, at_ms: float) -> SpeechInterrupted:
    """``interrupt()`` took effect: ``dropped`` requests will not be (fully) spoken; text goes on."""
    return {"type": "speech_interrupted", "dropped": dropped, "at_ms": round(at_ms, 1)}


def agent_end(
    request_id: str,
    mode: str,
    *,
    first_text_ms: float | None,
    first_audio_ms: float | None,
    total_ms: float,
    audio_ms: float,
    chunks: int,
    requests: int = 0,
    rtf: float | None = None,
    stall_ms: float = 0.0,
) -> AgentEnd:
    """The turn summary; every time is relative to ``agent_start``.

    ``requests``: how many synthesis requests the answer was cut into; ``rtf``: the engine's real-time
    factor as the pacer measured it (None: not measured); ``stall_ms``: the gaps a real-time player
    starting at the first audio would have had, as seen where the turn runs.
    """
    return {
        "type": "agent_end",
        "request_id": request_id,
        "mode": mode,
        "first_text_ms": _ms(first_text_ms),
        "first_audio_ms": _ms(first_audio_ms),
        "total_ms": round(total_ms, 1),
        "audio_ms": round(audio_ms, 1),
        "chunks": chunks,
        "requests": requests,
        "rtf": None if rtf is None else round(rtf, 3),
        "stall_ms": round(stall_ms, 1),
    }


def error(code: str, message: str) -> ErrorEvent:
    """The turn itself failed or was refused (inside a turn, an ``agent_end`` still follows)."""
    return {"type": "error", "code": code, "message": message}
