"""The streams that are their codec's frames back to back: MP3, AAC-LC in ADTS, and FLAC.

Why together: each plays from any whole frame (a decoder needs no index), so each is its packets with
at most a header per frame (ADTS) or one at the start (FLAC's marker and STREAMINFO).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strands_kokoro.audio_encoding.pyav_codec import AAC_CODEC, FLAC_CODEC, MP3_CODEC, CodecStream
from strands_kokoro.protocol import WIRE_AUDIO_FORMATS

if TYPE_CHECKING:
    import av as _av


class Mp3Encoder:
    """MP3 (LAME): the stream is its frames back to back, as LAME makes them."""

    wire_format = WIRE_AUDIO_FORMATS["mp3"]

    def __init__(self, sample_rate: int) -> None:
        self._codec = CodecStream(MP3_CODEC, input_rate=sample_rate, codec_rate=sample_rate)

    def encode(self, pcm: bytes) -> bytes:
        return b"".join(bytes(p) for p in self._codec.packets(pcm))

    def finish(self) -> bytes:
        return b"".join(bytes(p) for p in self._codec.flush())


# The sampling-frequency index of an ADTS header (ISO 14496-3, 1.6.3.4).
_ADTS_RATES: tuple[int, ...] = (
    96000,
    88200,
    64000,
    48000,
    44100,
    32000,
    24000,
    22050,
    16000,
    12000,
    11025,
    8000,
)
_ADTS_HEADER_BYTES = 7
_AAC_LC = 2  # MPEG-4 audio object type of AAC-LC (ADTS stores it minus one)
_MONO = 1  # ADTS channel configuration


def adts_header(payload_bytes: int, sample_rate: int) -> bytes:
    """The 7-byte ADTS header (no CRC) of one AAC-LC mono frame of ``payload_bytes``."""
    length = payload_bytes + _ADTS_HEADER_BYTES
    rate_index = _ADTS_RATES.index(sample_rate)
    bits = (
        (0xFFF << 44)  # syncword
        | (0 << 43)  # MPEG-4
        | (0 << 41)  # layer
        | (1 << 40)  # protection absent: no CRC
        | ((_AAC_LC - 1) << 38)
        | (rate_index << 34)
        | (_MONO << 30)
        | (length << 13)
        | (0x7FF << 2)  # buffer fullness: variable bit rate
    )
    return bits.to_bytes(_ADTS_HEADER_BYTES, "big")


class AdtsAacEncoder:
    """AAC-LC in ADTS framing: a header per frame, so a decoder can start at any frame."""

    wire_format = "aac"

    def __init__(self, sample_rate: int) -> None:
        rate = sample_rate if sample_rate in _ADTS_RATES else 48_000
        self._rate = rate
        self._codec = CodecStream(AAC_CODEC, input_rate=sample_rate, codec_rate=rate)

    def _frames(self, packets: list[_av.Packet]) -> bytes:
        return b"".join(adts_header(p.size, self._rate) + bytes(p) for p in packets)

    def encode(self, pcm: bytes) -> bytes:
        return self._frames(self._codec.packets(pcm))

    def finish(self) -> bytes:
        return self._frames(self._codec.flush())


_FLAC_MARKER = b"fLaC"
_LAST_METADATA_BLOCK = 0x80  # its flag bit; STREAMINFO is block type 0


class FlacEncoder:
    """A FLAC stream: ``fLaC``, the encoder's STREAMINFO (length unknown) as the only metadata, frames."""

    wire_format = "flac"

    def __init__(self, sample_rate: int) -> None:
        self._codec = CodecStream(FLAC_CODEC, input_rate=sample_rate, codec_rate=sample_rate)
        self._started = False

    def _write(self, packets: list[_av.Packet]) -> bytes:
        out = bytearray()
        if not self._started and packets:
            info = bytes(self._codec.context.extradata or b"")
            out += _FLAC_MARKER + bytes([_LAST_METADATA_BLOCK]) + len(info).to_bytes(3, "big") + info
            self._started = True
        for packet in packets:
            out += bytes(packet)
        return bytes(out)

    def encode(self, pcm: bytes) -> bytes:
        return self._write(self._codec.packets(pcm))

    def finish(self) -> bytes:
        return self._write(self._codec.flush())
