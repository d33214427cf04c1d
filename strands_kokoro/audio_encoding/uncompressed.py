"""The streams that need no codec: PCM as it is, and WAV of unknown length (a header, then the PCM).

Why apart: they work in every install (no PyAV), so :func:`~strands_kokoro.audio_encoding.encoder_available`
says yes to them always.
"""

from __future__ import annotations

import io
import struct
import wave

from strands_kokoro.protocol import AUDIO_FORMAT


class PcmEncoder:
    """The identity: PCM stays PCM (``pcm_s16le``)."""

    wire_format = AUDIO_FORMAT

    def encode(self, pcm: bytes) -> bytes:
        return pcm

    def finish(self) -> bytes:
        return b""


_UNKNOWN_SIZE = 0xFFFFFFFF


def wav_header(sample_rate: int) -> bytes:
    """A WAV header for a stream of unknown length: ``wave`` writes it, sizes patched to 0xFFFFFFFF."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(sample_rate)
        writer.writeframes(b"")
    header = bytearray(buffer.getvalue())
    struct.pack_into("<I", header, 4, _UNKNOWN_SIZE)  # RIFF chunk size
    struct.pack_into("<I", header, len(header) - 4, _UNKNOWN_SIZE)  # data chunk size
    return bytes(header)


class WavEncoder:
    """WAV of unknown length: its header with the first bytes, then the PCM as it comes."""

    wire_format = "wav"

    def __init__(self, sample_rate: int) -> None:
        self._header: bytes | None = wav_header(sample_rate)

    def encode(self, pcm: bytes) -> bytes:
        header, self._header = self._header or b"", None
        return header + pcm

    def finish(self) -> bytes:
        header, self._header = self._header or b"", None
        return header
