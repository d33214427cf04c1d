"""Audio joins: silence trimming, fades, s16le conversion, framing, streaming resampling, WAV header."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest

from strands_kokoro.protocol import Word
from tts_container.engines.base import Segment
from tts_container.routes.invocations import wav_header
from tts_container.synthesis.stitching import (
    KEEP_CLAUSE_TAIL_S,
    KEEP_LEAD_S,
    KEEP_TAIL_S,
    SegmentJoiner,
    StreamResampler,
    split_frames,
    to_s16le,
)

RATE = 24_000


def _padded_tone(lead_s: float, body_s: float, tail_s: float) -> np.ndarray:
    t = np.arange(round(body_s * RATE)) / RATE
    body = (0.5 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    return np.concatenate(
        [np.zeros(round(lead_s * RATE), np.float32), body, np.zeros(round(tail_s * RATE), np.float32)]
    )


def _joined(*segments: Segment, rate: int = RATE) -> np.ndarray:
    joiner = SegmentJoiner(rate)
    pcm = b"".join(joiner.segment(segment) for segment in segments) + joiner.finish()
    return np.frombuffer(pcm, "<i2").astype(np.float32) / 32767


def test_the_joiner_shortens_long_silences_and_keeps_short_ones() -> None:
    long_pads = _joined(Segment(_padded_tone(0.5, 1.0, 1.0)))
    assert long_pads.size == pytest.approx((KEEP_LEAD_S + 1.0 + KEEP_TAIL_S) * RATE, abs=2)
    short_pads = _padded_tone(0.005, 1.0, 0.1)
    assert _joined(Segment(short_pads)).size == pytest.approx(short_pads.size, abs=2)  # a natural pause stays
    clause = _joined(Segment(_padded_tone(0.0, 1.0, 1.0), ending="clause"))
    assert clause.size == pytest.approx((1.0 + KEEP_CLAUSE_TAIL_S) * RATE, abs=2)  # a comma's pause
    cut = _joined(Segment(_padded_tone(0.0, 1.0, 0.3), ending="continues"))
    assert cut.size == pytest.approx(1.3 * RATE, abs=2)  # a cut keeps what the model made: none added


def test_a_segment_of_pure_silence_gives_no_audio() -> None:
    assert _joined(Segment(np.zeros(RATE, np.float32))).size == 0


def test_the_joiner_brings_a_hard_cut_to_zero_without_touching_the_middle() -> None:
    cut = np.full(RATE, 0.8, np.float32)  # a segment split mid-sound: full scale at both edges
    faded = _joined(Segment(cut))
    assert abs(faded[0]) < 1e-3 and abs(faded[-1]) < 0.01
    middle = slice(RATE // 4, -RATE // 4)
    assert np.allclose(faded[middle], 0.8, atol=1e-4)
    assert np.all(np.abs(np.diff(faded)) < 0.02)  # no jump anywhere: the click is gone
    assert cut[0] == 0.8  # the input is untouched


def test_s16le_scales_and_clips() -> None:
    pcm = to_s16le(np.array([0.0, 1.0, -1.0, 2.0, -2.0, 0.5], np.float32))
    assert np.frombuffer(pcm, "<i2").tolist() == [0, 32767, -32767, 32767, -32767, 16384]


def test_split_frames_never_splits_a_sample() -> None:
    frames = split_frames(bytes(range(256)) * 40, max_bytes=1001)
    assert all(len(f) % 2 == 0 and len(f) <= 1001 for f in frames)
    assert b"".join(frames) == bytes(range(256)) * 40


@pytest.mark.parametrize("out_rate", [8_000, 16_000, 22_050, 44_100, 48_000])
def test_streaming_resampler_matches_whole_signal(out_rate: int) -> None:
    """Chunk by chunk equals all at once: the filter state carries across segment joins."""
    signal = _padded_tone(0.0, 1.3, 0.0)
    whole = StreamResampler(out_rate)
    expected = np.concatenate([whole.process(signal), whole.flush()])
    chunked = StreamResampler(out_rate)
    pieces = [chunked.process(piece) for piece in np.array_split(signal, 7)]
    got = np.concatenate([*pieces, chunked.flush()])
    assert got.size == expected.size == pytest.approx(signal.size * out_rate / RATE, abs=2)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_native_rate_passes_through() -> None:
    signal = _padded_tone(0.0, 0.1, 0.0)
    resampler = StreamResampler(RATE)
    assert resampler.process(signal) is signal and resampler.flush().size == 0


def test_joiner_output_is_continuous_pcm() -> None:
    joiner = SegmentJoiner(16_000)
    pcm = b"".join([joiner.segment(_padded_tone(0.2, 0.5, 0.6)), joiner.segment(_padded_tone(0.2, 0.5, 0.6))])
    pcm += joiner.finish()
    samples = np.frombuffer(pcm, "<i2")
    expected_s = 2 * (KEEP_LEAD_S + 0.5 + KEEP_TAIL_S)
    assert samples.size == pytest.approx(expected_s * 16_000, abs=4)
    assert np.max(np.abs(np.diff(samples.astype(np.int32)))) < 0.1 * 32767  # no click at the join


def test_joiner_hands_out_a_windowed_segments_words_with_its_first_piece_but_the_last() -> None:
    """Words come with the segment's first piece (the plan knows them); the joiner places them as soon
    as the trimmed lead is known, except the last word, clamped into the audio kept at the last piece.
    Together they are the words of the same audio joined whole."""
    tone = _padded_tone(0.2, 1.2, 0.6)
    lead_ms = 200.0
    written = (Word("one", lead_ms, 500.0), Word("two", 600.0, 900.0), Word("three", 1000.0, 1900.0))
    whole = SegmentJoiner(RATE)
    whole.segment(Segment(tone, written))
    windowed = SegmentJoiner(RATE)
    cut = tone.size // 2
    windowed.segment(Segment(tone[:cut], written, first=True, last=False))
    early = windowed.words
    windowed.segment(Segment(tone[cut:], (), first=False, last=True))
    assert [w.text for w in early] == ["one", "two"] and [w.text for w in windowed.words] == ["three"]
    assert early + windowed.words == whole.words
    assert early[0].start_ms == pytest.approx(KEEP_LEAD_S * 1000, abs=1)  # moved by the lead trimmed
    kept_ms = (KEEP_LEAD_S + 1.2 + KEEP_TAIL_S) * 1000
    assert windowed.words[0].end_ms <= kept_ms + 1  # the last word ends inside the audio kept


def test_wav_header_reads_back_with_stdlib_wave() -> None:
    pcm = to_s16le(_padded_tone(0.0, 0.25, 0.0))
    with wave.open(io.BytesIO(wav_header(22_050) + pcm), "rb") as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (1, 2, 22_050)
        assert reader.readframes(10**9) == pcm
    header = wav_header(24_000)
    assert len(header) == 44 and header[4:8] == b"\xff\xff\xff\xff" and header[40:44] == b"\xff\xff\xff\xff"
