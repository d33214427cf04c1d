"""What the wire's audio is: PCM's shape, the rates a server resamples to, the formats a client asks for.

Why apart from the other limits: the codecs (:mod:`strands_kokoro.audio_encoding`) and every reader of
audio frames need these names and nothing else of the protocol.
"""

from __future__ import annotations

from typing import Literal, get_args

AUDIO_FORMAT = "pcm_s16le"
CHANNELS = 1
SAMPLE_WIDTH_BYTES = 2
DEFAULT_SAMPLE_RATE = 24_000
# Rates the server resamples to (soxr); 24 kHz is Kokoro's native rate.
SUPPORTED_SAMPLE_RATES: tuple[int, ...] = (8_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000)


# The audio a client asks for (``format`` of a turn, a ``synthesize`` or a POST; Strands' AudioFormat names):
# raw PCM, Ogg Opus or MP3 (:mod:`strands_kokoro.audio_encoding`). PCM is the default everywhere: a client
# that names no format gets the bytes every client before it got.
AudioFormatName = Literal["pcm", "opus", "mp3"]
AUDIO_FORMATS: tuple[AudioFormatName, ...] = get_args(AudioFormatName)
# What audio frames and events say the bytes are (``format`` of ``synthesis_start`` and ``audio_chunk``):
# PCM keeps the name it always had; "opus" is an Ogg Opus stream (RFC 7845), "mp3" MPEG audio frames.
WIRE_AUDIO_FORMATS: dict[AudioFormatName, str] = {"pcm": AUDIO_FORMAT, "opus": "opus", "mp3": "mp3"}

# POST /invocations bodies: raw PCM, streaming WAV, SSE (base64 PCM), or a raw Ogg Opus / MP3 stream.
InvocationFormat = Literal["pcm", "wav", "sse", "opus", "mp3"]
INVOCATION_FORMATS: tuple[InvocationFormat, ...] = get_args(InvocationFormat)


def audio_ms(n_bytes: int, sample_rate: int) -> float:
    """Duration of ``n_bytes`` of mono s16le PCM, in milliseconds."""
    return n_bytes / (SAMPLE_WIDTH_BYTES * CHANNELS) / sample_rate * 1000.0
