"""The wire's compressed audio: real PyAV encoders, decoded back by FFmpeg's own demuxers and decoders.

What must hold for a listener: the stream decodes to the audio that went in (Opus: exactly as long, its
``pre_skip`` and end trimmed), any prefix of whole pages plays, the encoder hands out a frame as soon as
it has one (the first-audio cost is one frame), and a broken page is noticed (the CRC is Ogg's).
"""

from __future__ import annotations

import math
import struct
import sys

import numpy as np
import pytest

from strands_kokoro.audio_encoding import (
    FormatUnavailable,
    decode_audio,
    encoder_available,
    new_encoder,
    ogg_crc,
    warm_codecs,
)
from strands_kokoro.protocol import SUPPORTED_SAMPLE_RATES

RATE = 24_000
OPUS_FRAME = 480  # 20 ms at 24 kHz


def voice_like(seconds: float, rate: int = RATE) -> bytes:
    """Harmonics under a syllable-rate envelope: enough structure for a codec to keep or lose."""
    t = np.arange(int(seconds * rate)) / rate
    signal = (np.sin(2 * np.pi * 180 * t) + 0.4 * np.sin(2 * np.pi * 540 * t)) * (0.6 + 0.4 * np.sin(6 * t))
    return (signal * 9000).astype("<i2").tobytes()


def chunks(pcm: bytes, ms: int, rate: int = RATE) -> list[bytes]:
    size = 2 * rate * ms // 1000
    return [pcm[i : i + size] for i in range(0, len(pcm), size)]


def pages(stream: bytes) -> list[tuple[int, int, bytes]]:
    """``(flags, granule, page bytes)`` of every Ogg page, read by the RFC 3533 layout."""
    found, at = [], 0
    while at < len(stream):
        assert stream[at : at + 4] == b"OggS", f"no page at {at}"
        flags, granule = stream[at + 5], struct.unpack_from("<q", stream, at + 6)[0]
        count = stream[at + 26]
        size = 27 + count + sum(stream[at + 27 : at + 27 + count])
        found.append((flags, granule, stream[at : at + size]))
        at += size
    return found


def correlation(a: bytes, b: bytes) -> float:
    x = np.frombuffer(a, "<i2").astype(float)
    y = np.frombuffer(b, "<i2").astype(float)[: x.size]
    x = x[: y.size]
    return float(np.dot(x, y) / math.sqrt(np.dot(x, x) * np.dot(y, y)))


def test_ogg_crc_is_the_rfc_3533_checksum() -> None:
    assert ogg_crc(b"123456789") == 0x89A1897F  # CRC-32, poly 0x04C11DB7, no reflection, no xor


@pytest.mark.parametrize("rate", SUPPORTED_SAMPLE_RATES)
def test_opus_stream_decodes_to_exactly_the_audio_that_went_in(rate: int) -> None:
    pcm = voice_like(1.37, rate)
    encoder = new_encoder("opus", rate)
    stream = b"".join([*(encoder.encode(c) for c in chunks(pcm, 300, rate)), encoder.finish()])
    decoded = decode_audio(stream, "opus", rate)
    # pre_skip and the padding of the last frame are trimmed (rates Opus does not take are resampled).
    assert abs(len(decoded) - len(pcm)) <= 2 * 2
    assert correlation(pcm, decoded) > 0.9


def test_opus_pages_are_whole_valid_and_framed_as_rfc_7845_says() -> None:
    encoder = new_encoder("opus", RATE)
    outputs = [encoder.encode(c) for c in chunks(voice_like(1.0), 250)] + [encoder.finish()]
    stream = b"".join(outputs)
    found = pages(stream)
    assert found[0][0] == 0x02 and found[0][2][28:36] == b"OpusHead"  # BOS, the head alone on its page
    assert found[1][2][28:36] == b"OpusTags" and found[1][1] == 0
    assert found[-1][0] == 0x04  # EOS
    granules = [g for _, g, _ in found[2:]]
    assert granules == sorted(granules)
    pre_skip = struct.unpack_from("<H", found[0][2], 28 + 10)[0]
    assert granules[-1] - pre_skip == len(voice_like(1.0)) // 2 * 2  # 48 kHz samples of the input
    for _, _, page in found:  # each page's CRC is Ogg's over the page with the CRC field zeroed
        blank = page[:22] + b"\0\0\0\0" + page[26:]
        assert struct.unpack_from("<I", page, 22)[0] == ogg_crc(blank)
    # Every encode() call hands out whole pages: each output alone is a run of complete pages.
    assert all(pages(out) for out in outputs if out)


def test_a_prefix_of_whole_opus_pages_plays() -> None:
    encoder = new_encoder("opus", RATE)
    outputs = [encoder.encode(c) for c in chunks(voice_like(2.0), 200)]
    prefix = b"".join(outputs[:3])  # no EOS: what a listener has a moment into the stream
    decoded = decode_audio(prefix, "opus", RATE)
    assert len(decoded) // 2 > 3 * 200 * RATE // 1000 - 2 * OPUS_FRAME
    assert correlation(voice_like(2.0), decoded) > 0.9


def test_a_corrupted_page_is_refused_by_ffmpeg() -> None:
    encoder = new_encoder("opus", RATE)
    stream = bytearray(b"".join([encoder.encode(voice_like(0.5)), encoder.finish()]))
    whole = len(decode_audio(bytes(stream), "opus", RATE))
    third = pages(bytes(stream))[2][2]
    at = bytes(stream).index(third) + len(third) - 3
    stream[at] ^= 0xFF  # one audio byte of the first audio page: its CRC no longer matches
    assert len(decode_audio(bytes(stream), "opus", RATE)) < whole


def test_opus_hands_out_each_frame_as_soon_as_it_is_complete() -> None:
    """The first-audio cost of the encoder: one 20 ms frame (its look-ahead is trimmed, not waited for)."""
    encoder = new_encoder("opus", RATE)
    pcm = voice_like(0.2)
    assert encoder.encode(pcm[: 2 * (OPUS_FRAME - 10)]) == b""
    first = encoder.encode(pcm[2 * (OPUS_FRAME - 10) : 2 * OPUS_FRAME])
    assert first and len(pages(first)) == 3  # OpusHead, OpusTags, the first frame's page


def test_mp3_stream_decodes_and_holds_back_a_bounded_amount() -> None:
    pcm = voice_like(1.5)
    encoder = new_encoder("mp3", RATE)
    outputs = [encoder.encode(c) for c in chunks(pcm, 300)]
    assert outputs[0]  # a 300 ms first chunk is out at once
    held = len(pcm) - len(decode_audio(b"".join(outputs), "mp3", RATE))
    assert held < 2 * RATE * 200 // 1000  # LAME keeps under 200 ms until more comes or the stream ends
    stream = b"".join([*outputs, encoder.finish()])
    decoded = decode_audio(stream, "mp3", RATE)
    assert stream[:2] == b"\xff\xf3"  # MPEG-2 layer III frame sync: 24 kHz, no ID3, no container
    assert len(pcm) <= len(decoded) <= len(pcm) + 2 * 2 * 1152 + 2 * 1105  # + LAME delay and padding
    lag = 1105  # LAME's encoder delay at 24 kHz
    assert correlation(pcm, decoded[2 * lag :]) > 0.9


def test_pcm_is_passed_through() -> None:
    encoder = new_encoder("pcm", RATE)
    assert encoder.wire_format == "pcm_s16le"
    assert encoder.encode(b"\x01\x02") == b"\x01\x02" and encoder.finish() == b""
    assert decode_audio(b"\x01\x02", "pcm", RATE) == b"\x01\x02"


def test_without_pyav_a_compressed_format_is_a_coded_refusal_test_double(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A test double of an install without PyAV (find_spec says it is missing)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "av" else real(name, *a)
    )
    assert encoder_available("pcm") and not encoder_available("opus")
    with pytest.raises(FormatUnavailable) as refused:
        new_encoder("opus", RATE)
    assert refused.value.code == "format_unavailable" and "PyAV" in refused.value.message
    assert warm_codecs(RATE) == ()  # nothing to warm: the server starts all the same


def test_warming_the_codecs_sets_up_every_compressed_format() -> None:
    assert warm_codecs(RATE) == ("opus", "mp3", "aac", "flac")
    assert "av" in sys.modules


@pytest.mark.parametrize("fmt", ["aac", "flac", "wav"])
@pytest.mark.parametrize("rate", [24_000, 22_050])
def test_openais_other_formats_stream_and_decode_back_to_the_audio(fmt: str, rate: int) -> None:
    """AAC (ADTS), FLAC and WAV: bytes come with the first chunks, and any prefix of whole chunks plays."""
    pcm = voice_like(2.0, rate)
    encoder = new_encoder(fmt, rate)  # type: ignore[arg-type]
    outputs = [encoder.encode(pcm[i : i + 9600]) for i in range(0, len(pcm), 9600)]
    assert outputs[0]  # nothing waits for the end of the stream
    stream = b"".join(outputs) + encoder.finish()
    decoded_s = len(decode_audio(stream, fmt, rate)) / 2 / rate  # type: ignore[arg-type]
    assert decoded_s == pytest.approx(2.0, abs=0.1)  # AAC adds 1024 priming samples and pads its last frame
    prefix_s = len(decode_audio(b"".join(outputs[:3]), fmt, rate)) / 2 / rate  # type: ignore[arg-type]
    assert 0.2 < prefix_s < 1.0
