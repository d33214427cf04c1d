"""The demo's numbers: playback and stalls (architecture §7), the table, the headline, WAV and PNG output."""

from __future__ import annotations

import base64
import math
import wave
from array import array
from pathlib import Path

import pytest

from agentcore_app.local.playback import playback, stall_ms
from agentcore_app.local.report import (
    answer_lines,
    comparison,
    cut_pauses_ms,
    headline,
    measures,
    median_measures,
    record_columns,
    table,
    write_wav,
)
from agentcore_app.local.timeline import write_timeline
from agentcore_app.local.turn_record import TimedEvent, TurnRecord


def _chunk(at_ms: float, audio_ms: float, seq: int = 0) -> TimedEvent:
    pcm = b"\x01\x00" * int(24 * audio_ms)  # 24 samples per ms at 24 kHz
    audio = base64.b64encode(pcm).decode()
    return TimedEvent(
        at_ms, {"type": "audio_chunk", "seq": seq, "sentence": 0, "audio": audio, "sample_rate": 24000}
    )


def _record(mode: str, chunks: list[tuple[float, float]], first_text: float = 50.0) -> TurnRecord:
    record = TurnRecord(mode=mode)
    record.add(TimedEvent(0.0, {"type": "agent_start", "mode": mode}))
    record.add(TimedEvent(first_text, {"type": "text_delta", "seq": 0, "text": "Hi. "}))
    for seq, (at, length) in enumerate(chunks):
        record.add(_chunk(at, length, seq))
    record.add(TimedEvent(chunks[-1][0] + 1 if chunks else 100.0, {"type": "agent_end", "mode": mode}))
    return record


@pytest.mark.parametrize(
    ("chunks", "stall"),
    [
        ([(100, 500), (300, 500), (700, 500)], 0.0),  # every chunk arrives while the previous still plays
        ([(100, 200), (500, 200)], 200.0),  # player runs dry at 300, next audio at 500
        ([(100, 100), (150, 100), (400, 100)], 100.0),  # queue ends at 300, next at 400
        ([(100, 1000)], 0.0),
    ],
)
def test_stall_counts_only_silence_after_first_audio(chunks: list[tuple[float, float]], stall: float) -> None:
    assert stall_ms(_record("bidi", chunks)) == pytest.approx(stall, abs=0.1)


def test_table_counts_every_time_from_the_request_and_says_so() -> None:
    bidi = _record("bidi", [(400, 900), (1100, 900)])
    batch = _record("batch", [(2000, 1800)])
    text = table(record_columns([bidi, batch]))
    assert text.splitlines()[0].startswith("times since the moment the request was sent")
    assert "first audio (what the listener waits)" in text and "400 ms" in text and "2,000 ms" in text
    assert "LLM: whole answer written" in text and "playback stalls after first audio" in text
    shown = {"bidi": measures(bidi), "batch": measures(batch)}
    assert (
        headline(shown) == "bidi spoke 5.0× sooner than batch: first audio 400 vs 2,000 ms after the request"
    )
    shown["batch"] = measures(TurnRecord(mode="batch"))
    assert headline(shown) == "no audio in one of the modes, no ratio"
    assert headline({"bidi": measures(bidi)}) is None


def test_the_answer_written_is_the_last_text_and_the_medians_are_per_measure() -> None:
    runs = [_record("bidi", [(at, 900)], first_text=text) for at, text in ((400, 50), (900, 60), (500, 700))]
    runs[1].add(TimedEvent(1500.0, {"type": "text_delta", "seq": 1, "text": "More."}))
    assert measures(runs[1])["answer_written_ms"] == 1500.0 and measures(runs[0])["answer_written_ms"] == 50.0
    median = median_measures([measures(r) for r in runs])
    assert median["runs"] == 3 and median["first_audio_ms"] == 500.0 and median["first_text_ms"] == 60.0
    assert median["answer_written_ms"] == 700.0


@pytest.mark.parametrize(
    ("batch_ms", "bidi_ms", "says"),
    [
        (2000.0, 400.0, "bidi spoke 5.0× sooner than batch: first audio 400 vs 2,000 ms after the request"),
        (1000.0, 1250.0, "bidi spoke later than batch: first audio 1,250 vs 1,000 ms after the request"),
        (
            1000.0,
            1000.0,
            "bidi and batch spoke about as soon: first audio 1,000 vs 1,000 ms after the request",
        ),
        (
            1000.0,
            1030.0,
            "bidi and batch spoke about as soon: first audio 1,030 vs 1,000 ms after the request",
        ),
        (1000.0, None, "no audio in one of the modes, no ratio"),
        (None, None, "no audio in either mode, no ratio"),
    ],
)
def test_the_comparison_says_sooner_later_or_about_as_soon(
    batch_ms: float | None, bidi_ms: float | None, says: str
) -> None:
    assert comparison(batch_ms, bidi_ms) == says


def test_playback_blocks_and_stalls_are_what_the_stall_figure_counts() -> None:
    record = _record("bidi", [(100, 200), (250, 100), (500, 200)])
    heard = playback(record)
    assert [(b.start_ms, b.end_ms, b.audio_ms) for b in heard.blocks] == [(100, 400, 0), (500, 700, 300)]
    assert heard.stalls == [(400, 500)] and heard.stall_ms == stall_ms(record) == 100
    assert heard.heard_at(350) == 550 and heard.heard_at(0) == 100 and heard.heard_at(600) is None


def test_each_modes_answer_is_labelled() -> None:
    bidi, batch = _record("bidi", [(400, 900)]), _record("batch", [(900, 900)])
    assert answer_lines([bidi, batch]) == ["answer (bidi, batch): Hi."]
    batch.add(TimedEvent(950.0, {"type": "text_delta", "seq": 1, "text": "There."}))
    assert answer_lines([bidi, batch]) == ["bidi answer: Hi.", "batch answer: Hi. There."]
    assert answer_lines([TurnRecord(mode="bidi")]) == ["bidi answer: (no text)"]


def test_wav_and_timeline_are_written(tmp_path: Path) -> None:
    bidi = _record("bidi", [(400, 900), (1100, 900)])
    batch = _record("batch", [(2000, 1800)])
    with wave.open(str(write_wav(bidi, tmp_path / "b.wav"))) as wav:
        assert wav.getframerate() == 24000 and wav.getnframes() == 24 * 1800
    png = write_timeline([bidi, batch], tmp_path / "t.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_pauses_added_by_cuts_are_the_silences_at_joins_inside_a_sentence() -> None:
    """Synthetic audio: a tone, 300 ms of silence where the pacer cut a sentence, a tone, a comma's pause
    and a sentence end's (a reader's, not counted), a tone. Only the join between two words is reported."""
    rate = 24_000

    def tone(ms: float) -> bytes:
        n = round(ms * rate / 1000)
        return array("h", (round(8000 * math.sin(2 * math.pi * 220 * i / rate)) for i in range(n))).tobytes()

    silence = bytes(2 * round(0.3 * rate))
    record = TurnRecord(mode="bidi", sample_rate=rate)
    parts = [
        ("The sky appears", tone(800) + silence),
        ("blue today,", tone(700) + bytes(2 * 6000)),
        ("and clear.", tone(700) + bytes(2 * 6000)),
        ("Yes.", tone(500)),
    ]
    for index, (text, pcm) in enumerate(parts):
        record.pcm += pcm
        audio_ms = len(pcm) / 2 / rate * 1000
        record.add(
            TimedEvent(
                0.0, {"type": "sentence_complete", "sentence": index, "text": text, "audio_ms": audio_ms}
            )
        )
    (pause,) = cut_pauses_ms(record)
    assert 280 <= pause <= 310
    assert "pauses added by cuts" in table(record_columns([record]))
