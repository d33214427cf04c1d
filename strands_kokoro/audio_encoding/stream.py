"""What an audio stream is to its users: the formats there are, the encoder protocol, choosing one, and
warming every codec before the first stream.

Why apart from the codecs: callers (the model server, the turn's output) name a format and get an
encoder; whether that format needs PyAV, and which class writes it, is decided here once.
"""

from __future__ import annotations

import importlib.util
from typing import Literal, Protocol, get_args

from strands_kokoro.audio_encoding.framed import AdtsAacEncoder, FlacEncoder, Mp3Encoder
from strands_kokoro.audio_encoding.ogg_opus import OggOpusEncoder
from strands_kokoro.audio_encoding.uncompressed import PcmEncoder, WavEncoder
from strands_kokoro.errors import CodedError
from strands_kokoro.protocol import AudioFormatName, ErrorCode

# Every stream this module writes: the wire's formats (:data:`~strands_kokoro.protocol.AUDIO_FORMATS`) and
# the three more OpenAI's speech API names.
EncodedFormat = Literal["pcm", "opus", "mp3", "aac", "flac", "wav"]
ENCODED_FORMATS: tuple[EncodedFormat, ...] = get_args(EncodedFormat)


class FormatUnavailable(CodedError):
    """A compressed format was asked for where PyAV is not installed (code ``format_unavailable``)."""

    def __init__(self, fmt: str) -> None:
        super().__init__(
            ErrorCode.FORMAT_UNAVAILABLE, f"this server cannot encode {fmt!r} (PyAV is not installed)"
        )


class AudioEncoder(Protocol):
    """One audio stream: PCM s16le mono in, the stream's bytes out, as soon as the codec has them."""

    @property
    def wire_format(self) -> str:
        """What the bytes are, as audio events and ``synthesis_start`` name it."""
        ...

    def encode(self, pcm: bytes) -> bytes:
        """The stream's next bytes for ``pcm`` (may be empty: less than a frame is waiting)."""
        ...

    def finish(self) -> bytes:
        """The end of the stream: what the codec still held, and the stream's last page or frame."""
        ...


def encoder_available(fmt: AudioFormatName | EncodedFormat) -> bool:
    """Can this process encode ``fmt``? PCM and WAV always; the compressed ones need PyAV."""
    return fmt in ("pcm", "wav") or importlib.util.find_spec("av") is not None


def new_encoder(fmt: AudioFormatName | EncodedFormat, sample_rate: int) -> AudioEncoder:
    """A fresh stream of ``fmt`` for PCM at ``sample_rate``; :class:`FormatUnavailable` without PyAV."""
    if fmt == "pcm":
        return PcmEncoder()
    if fmt == "wav":
        return WavEncoder(sample_rate)
    if not encoder_available(fmt):
        raise FormatUnavailable(fmt)
    if fmt == "opus":
        return OggOpusEncoder(sample_rate)
    if fmt == "aac":
        return AdtsAacEncoder(sample_rate)
    if fmt == "flac":
        return FlacEncoder(sample_rate)
    return Mp3Encoder(sample_rate)


_WARM_UP_MS = 100


def warm_codecs(sample_rate: int) -> tuple[EncodedFormat, ...]:
    """Load PyAV and run a short silence through a stream of every compressed format at ``sample_rate``,
    so that a process's first compressed stream starts as soon as its PCM does: FFmpeg's libraries load
    and each codec sets itself up on first use. Returns the formats warmed (none without PyAV)."""
    if not encoder_available("opus"):
        return ()
    silence = bytes(2 * sample_rate * _WARM_UP_MS // 1000)
    warmed = tuple(fmt for fmt in ENCODED_FORMATS if fmt not in ("pcm", "wav"))
    for fmt in warmed:
        encoder = new_encoder(fmt, sample_rate)
        encoder.encode(silence)
        encoder.finish()
    return warmed
