"""Ogg Opus (RFC 7845) written here: Ogg pages (RFC 3533) around libopus packets, a page per chunk.

Why the pages are ours: FFmpeg's Ogg muxer decides pages by duration and PyAV cannot flush one on
demand, so a page per :meth:`OggOpusEncoder.encode` keeps latency at the codec's own.
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from strands_kokoro.audio_encoding.pyav_codec import OPUS_CODEC, CodecStream
from strands_kokoro.protocol import WIRE_AUDIO_FORMATS

if TYPE_CHECKING:
    import av as _av

OPUS_RATES: tuple[int, ...] = (8_000, 12_000, 16_000, 24_000, 48_000)  # what libopus takes as input
OPUS_GRANULE_RATE = 48_000  # Ogg Opus granule positions count 48 kHz samples whatever the input rate
_MAX_LACING = 255  # lacing values per Ogg page
_BOS, _EOS = 0x02, 0x04


def _lacing(size: int) -> bytes:
    return b"\xff" * (size // 255) + bytes([size % 255])


def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        value = byte << 24
        for _ in range(8):
            value = ((value << 1) ^ 0x04C11DB7) if value & 0x80000000 else value << 1
        table.append(value & 0xFFFFFFFF)
    return tuple(table)


_CRC_TABLE = _crc_table()


def ogg_crc(data: bytes) -> int:
    """Ogg's page checksum (RFC 3533): CRC-32, polynomial 0x04C11DB7, no reflection, zero init and xor."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC_TABLE[((crc >> 24) ^ byte) & 0xFF]
    return crc


class OggPages:
    """Writes one logical Ogg stream: whole packets per page, granule positions as given."""

    def __init__(self) -> None:
        self.serial = secrets.randbits(32)
        self.sequence = 0

    def page(self, packets: list[bytes], granule: int, flags: int = 0) -> bytes:
        lacing = b"".join(_lacing(len(p)) for p in packets)
        header = struct.pack(
            "<4sBBqIIIB", b"OggS", 0, flags, granule, self.serial, self.sequence, 0, len(lacing)
        )
        page = bytearray(header + lacing + b"".join(packets))
        struct.pack_into("<I", page, 22, ogg_crc(bytes(page)))
        self.sequence += 1
        return bytes(page)


def _fill_pages(packets: Iterable[tuple[bytes, int]]) -> Iterator[list[tuple[bytes, int]]]:
    """Group ``(packet, granule after it)`` into pages of at most 255 lacing values, whole packets each."""
    page: list[tuple[bytes, int]] = []
    used = 0
    for packet, granule in packets:
        need = len(packet) // 255 + 1
        if page and used + need > _MAX_LACING:
            yield page
            page, used = [], 0
        page.append((packet, granule))
        used += need
    if page:
        yield page


class OggOpusEncoder:
    """Ogg Opus (RFC 7845): headers with the first audio, a page per :meth:`encode`, EOS at :meth:`finish`.

    Granule positions count 48 kHz samples including the encoder's ``pre_skip``; the last packet's
    duration is what FFmpeg trimmed it to, so the EOS granule tells a decoder where the audio ends.
    """

    wire_format = WIRE_AUDIO_FORMATS["opus"]

    def __init__(self, sample_rate: int) -> None:
        codec_rate = sample_rate if sample_rate in OPUS_RATES else OPUS_GRANULE_RATE
        self._codec = CodecStream(OPUS_CODEC, input_rate=sample_rate, codec_rate=codec_rate)
        self._to_granule = OPUS_GRANULE_RATE // codec_rate
        self._pages = OggPages()
        self._granule = 0
        self._started = False

    def _head(self) -> bytes:
        """The OpusHead (FFmpeg's, with its pre_skip) and OpusTags pages that open the stream."""
        head = bytes(self._codec.context.extradata or b"")
        tags_vendor = b"strands-kokoro"
        tags = b"OpusTags" + struct.pack("<I", len(tags_vendor)) + tags_vendor + struct.pack("<I", 0)
        return self._pages.page([head], 0, _BOS) + self._pages.page([tags], 0)

    def _write(self, packets: list[_av.Packet], *, last: bool) -> bytes:
        if not packets and not (last and self._started):
            return b""
        out = bytearray()
        if not self._started:
            out += self._head()
            self._started = True
        timed = []
        for packet in packets:
            self._granule += int(packet.duration or 0) * self._to_granule
            timed.append((bytes(packet), self._granule))
        pages = list(_fill_pages(timed))
        for number, page in enumerate(pages):
            flags = _EOS if last and number == len(pages) - 1 else 0
            out += self._pages.page([p for p, _ in page], page[-1][1], flags)
        return bytes(out)

    def encode(self, pcm: bytes) -> bytes:
        return self._write(self._codec.packets(pcm), last=False)

    def finish(self) -> bytes:
        packets = self._codec.flush()
        if not packets and self._started:  # nothing held back: an empty EOS page ends the stream
            return self._pages.page([], self._granule, _EOS)
        return self._write(packets, last=True)
