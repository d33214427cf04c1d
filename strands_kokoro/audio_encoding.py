"""Compressed audio on the wire: Ogg Opus and MP3 (and for OpenAI's speech API also AAC, FLAC and WAV),
encoded incrementally, one stream per request or turn.

Both ends use this module (architecture §2: ``tts_container`` imports ``strands_kokoro.protocol`` and
this, the codecs of the wire's audio), so a request's ``format`` means the same bytes whoever encodes
them: the model server for its POST and WebSocket clients, the turn's output
(:mod:`strands_kokoro.turn_output`) for the agent app's listeners.

Why these choices (measured, see ``benchmarks/transport.py`` and docs/benchmarks.md):

- **PyAV** (FFmpeg's libopus and LAME) is the encoder: its wheels bundle both codecs for every platform,
  it resamples the rates Opus does not take (22.05, 32, 44.1 kHz) on the way in, and it encodes a frame as
  soon as one is there. ``lameenc`` (MP3 only) held back 340 ms of audio and resampled 24 kHz to 22.05;
  ``soundfile``'s Ogg writer held back a whole second (its page latency) unless driven by a private call.
  PyAV is imported only when a compressed format is asked for: ``strands_kokoro`` imports without it.
- **Opus** (20 ms frames, 24 kbit/s VBR) is the compressed default: a frame is out 20 ms after its first
  sample, and its look-ahead (6.5 ms) is the ``pre_skip`` a decoder trims. The stream is **Ogg Opus**
  (RFC 7845), so any prefix of whole pages plays in a browser (``<audio>``, ``decodeAudioData``,
  WebCodecs after a page reader) and saved as a file it is a ``.opus``.
- **The Ogg pages are written here**, one page per call of :meth:`OggOpusEncoder.encode` (whatever the
  codec made of that chunk). FFmpeg's own Ogg muxer decides pages by duration (``page_duration``): pages
  of a frame each cost 28 bytes per 20 ms (+1.4 KB/s, half the audio again), longer pages hold audio back
  for their length, and PyAV cannot flush a page on demand. Ogg framing is a 27-byte header, a lacing
  table and a CRC (RFC 3533): small enough to own.
- **MP3** (LAME, 32 kbit/s CBR) is for players without Opus: every MP3 decoder plays any prefix of whole
  frames. LAME holds ~140 ms of audio until the next chunk or the end of the stream, and its stream starts
  with ~1105 samples of encoder delay (46 ms at 24 kHz) that no raw MP3 stream can tell a decoder to trim.
- **AAC, FLAC and WAV** are the other formats OpenAI's ``/v1/audio/speech`` offers (``response_format``;
  :mod:`tts_container.openai_speech`). Each is written so any prefix plays, as the others are: AAC-LC
  (FFmpeg's encoder, 64 kbit/s) as an ADTS stream, a 7-byte header per frame written here (an ``.aac``
  file is exactly that); FLAC as its stream marker, the encoder's STREAMINFO block (total length 0:
  unknown, which the format allows) and its frames; WAV as a header whose sizes say "unknown"
  (0xFFFFFFFF, as streaming WAV writers do) followed by the PCM.
"""

from __future__ import annotations

import importlib.util
import io
import secrets
import struct
import wave
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from strands_kokoro.errors import CodedError
from strands_kokoro.protocol import AUDIO_FORMAT, WIRE_AUDIO_FORMATS, AudioFormatName, ErrorCode

if TYPE_CHECKING:
    import av as _av

__all__ = [
    "AAC_BITRATE",
    "ENCODED_FORMATS",
    "MP3_BITRATE",
    "OPUS_BITRATE",
    "AudioEncoder",
    "EncodedFormat",
    "FormatUnavailable",
    "decode_audio",
    "encoder_available",
    "new_encoder",
    "ogg_crc",
    "wav_header",
]

# Every stream this module writes: the wire's formats (:data:`~strands_kokoro.protocol.AUDIO_FORMATS`) and
# the three more OpenAI's speech API names.
EncodedFormat = Literal["pcm", "opus", "mp3", "aac", "flac", "wav"]
ENCODED_FORMATS: tuple[EncodedFormat, ...] = get_args(EncodedFormat)

OPUS_BITRATE = 24_000
MP3_BITRATE = 32_000
AAC_BITRATE = 64_000
OPUS_RATES: tuple[int, ...] = (8_000, 12_000, 16_000, 24_000, 48_000)  # what libopus takes as input
OPUS_GRANULE_RATE = 48_000  # Ogg Opus granule positions count 48 kHz samples whatever the input rate
_MAX_LACING = 255  # lacing values per Ogg page
_BOS, _EOS = 0x02, 0x04


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


class PcmEncoder:
    """The identity: PCM stays PCM (``pcm_s16le``)."""

    wire_format = AUDIO_FORMAT

    def encode(self, pcm: bytes) -> bytes:
        return pcm

    def finish(self) -> bytes:
        return b""


@dataclass(frozen=True, slots=True)
class _Codec:
    """An FFmpeg encoder as PyAV names it, the sample format it takes, and our bit rate for it."""

    name: str
    sample_format: str
    bitrate: int


OPUS_CODEC = _Codec("libopus", "s16", OPUS_BITRATE)
MP3_CODEC = _Codec("libmp3lame", "s16p", MP3_BITRATE)
AAC_CODEC = _Codec("aac", "fltp", AAC_BITRATE)
FLAC_CODEC = _Codec("flac", "s16", 0)  # lossless: no bit rate to ask for


class _CodecStream:
    """A PyAV encoder fed s16 mono PCM at ``input_rate`` (PyAV adapts frame sizes and rates itself)."""

    def __init__(self, codec: _Codec, *, input_rate: int, codec_rate: int):
        import av

        context: Any = av.CodecContext.create(codec.name, "w")
        context.sample_rate = codec_rate
        context.layout = "mono"
        context.format = codec.sample_format
        if codec.bitrate:
            context.bit_rate = codec.bitrate
        context.open()
        self.context = context
        self.input_rate = input_rate
        self._av: Any = av
        self._samples = 0

    def packets(self, pcm: bytes) -> list[_av.Packet]:
        count = len(pcm) // 2
        if not count:
            return []
        frame = self._av.AudioFrame(format="s16", layout="mono", samples=count)
        frame.planes[0].update(pcm[: 2 * count])
        frame.sample_rate = self.input_rate
        frame.pts = self._samples
        self._samples += count
        return list(self.context.encode(frame))

    def flush(self) -> list[_av.Packet]:
        return list(self.context.encode(None))


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
        self._codec = _CodecStream(OPUS_CODEC, input_rate=sample_rate, codec_rate=codec_rate)
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


class Mp3Encoder:
    """MP3 (LAME): the stream is its frames back to back, as LAME makes them."""

    wire_format = WIRE_AUDIO_FORMATS["mp3"]

    def __init__(self, sample_rate: int) -> None:
        self._codec = _CodecStream(MP3_CODEC, input_rate=sample_rate, codec_rate=sample_rate)

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
        self._codec = _CodecStream(AAC_CODEC, input_rate=sample_rate, codec_rate=rate)

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
        self._codec = _CodecStream(FLAC_CODEC, input_rate=sample_rate, codec_rate=sample_rate)
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


_DEMUXERS = {"opus": "ogg", "mp3": "mp3", "aac": "aac", "flac": "flac", "wav": "wav"}


def decode_audio(data: bytes, fmt: AudioFormatName | EncodedFormat, sample_rate: int) -> bytes:
    """A stream's audio as PCM s16le mono at ``sample_rate`` (FFmpeg decodes, trims ``pre_skip`` and the
    end, and resamples). For clients that keep or measure what they heard: the demo's WAVs, the
    benchmarks' Whisper; the listener's own decoder is the browser's."""
    if fmt == "pcm":
        return data
    if not data:
        return b""
    if importlib.util.find_spec("av") is None:
        raise FormatUnavailable(fmt)
    import av

    out = bytearray()
    resampler = av.AudioResampler(format="s16", layout="mono", rate=sample_rate)
    with av.open(io.BytesIO(data), mode="r", format=_DEMUXERS[fmt]) as container:
        for frame in container.decode(audio=0):
            for converted in resampler.resample(frame):
                out += bytes(converted.planes[0])[: converted.samples * 2]
        for converted in resampler.resample(None):
            out += bytes(converted.planes[0])[: converted.samples * 2]
    return bytes(out)
