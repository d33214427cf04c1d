"""A whole stream back to PCM, for clients that keep or measure what they heard (not for the listener)."""

from __future__ import annotations

import importlib.util
import io

from strands_kokoro.audio_encoding.stream import EncodedFormat, FormatUnavailable
from strands_kokoro.protocol import AudioFormatName

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
