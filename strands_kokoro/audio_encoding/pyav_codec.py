"""FFmpeg's encoders through PyAV: which codec, its sample format and bit rate, fed PCM as it comes.

Why one wrapper: every compressed stream here (Ogg Opus, MP3, AAC, FLAC) feeds s16 mono PCM to a PyAV
encoder and takes its packets; only the framing around the packets differs. PyAV is imported when a
stream is opened, never at import: ``strands_kokoro`` imports without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import av as _av

OPUS_BITRATE = 24_000
MP3_BITRATE = 32_000
AAC_BITRATE = 64_000


@dataclass(frozen=True, slots=True)
class Codec:
    """An FFmpeg encoder as PyAV names it, the sample format it takes, and our bit rate for it."""

    name: str
    sample_format: str
    bitrate: int


OPUS_CODEC = Codec("libopus", "s16", OPUS_BITRATE)
MP3_CODEC = Codec("libmp3lame", "s16p", MP3_BITRATE)
AAC_CODEC = Codec("aac", "fltp", AAC_BITRATE)
FLAC_CODEC = Codec("flac", "s16", 0)  # lossless: no bit rate to ask for


class CodecStream:
    """A PyAV encoder fed s16 mono PCM at ``input_rate`` (PyAV adapts frame sizes and rates itself)."""

    def __init__(self, codec: Codec, *, input_rate: int, codec_rate: int):
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
