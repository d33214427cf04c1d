"""The demo's numbers: stall accounting (architecture §7), the table, the ratio line, WAV and PNG output."""

from __future__ import annotations

import base64
import math
import wave
from array import array
from pathlib import Path

import pytest

from agentcore_app.client import TimedEvent, TurnRecord
from agentcore_app.report import (
    answer_lines,
    comparison,
    cut_pauses_ms,
    results_json,
    speedup_line,
    stall_ms,
    table,
    write_timeline,
    write_wav,
)


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


def test_table_and_ratio_line() -> None:
    bidi = _record("bidi", [(400, 900), (1100, 900)])
    batch = _record("batch", [(2000, 1800)])
    text = table([bidi, batch])
    assert "time to first audio" in text and "400 ms" in text and "2,000 ms" in text
    assert "playback stall" in text
    # From the model's first words (50 ms in both): 350 vs 1,950 ms.
    said = "bidi first audio is 5.6× sooner than batch, counted from the model's first words"
    assert speedup_line([bidi, batch]) == said
    silent = TurnRecord(mode="batch")
    assert "no ratio" in speedup_line([bidi, silent])


def test_the_ratio_does_not_credit_a_prompt_cache_to_the_mode_that_ran_second() -> None:
    """Bidi ran first and read the prompt (first words at 450 ms); batch found it cached (50 ms)."""
    bidi = _record("bidi", [(800, 900)], first_text=450.0)
    batch = _record("batch", [(1100, 1800)], first_text=50.0)
    assert speedup_line([bidi, batch]) == (
        "bidi first audio is 3.0× sooner than batch, counted from the model's first words"
    )


def test_the_saved_speedup_is_the_printed_one() -> None:
    """``--json`` saved 0.77 where the line said 2.0× sooner: it divided the times from the request."""
    bidi = _record("bidi", [(800, 900)], first_text=450.0)
    batch = _record("batch", [(1100, 1800)], first_text=50.0)
    saved = results_json([bidi, batch], {"transport": "ws"})
    assert saved["bidi_first_audio_speedup"] == 3.0  # (1100 - 50) / (800 - 450), as the line says
    assert speedup_line([bidi, batch]).startswith("bidi first audio is 3.0× sooner")
    assert saved["transport"] == "ws" and set(saved["modes"]) == {"bidi", "batch"}
    assert results_json([bidi], {})["bidi_first_audio_speedup"] is None


@pytest.mark.parametrize(
    ("batch_ms", "bidi_ms", "says"),
    [
        (2000.0, 400.0, "bidi first audio is 5.0× sooner than batch"),
        (1000.0, 1250.0, "bidi first audio is later than batch (1,250 vs 1,000 ms: 1.2× as long)"),
        (1000.0, 1000.0, "bidi and batch first audio about the same (1,000 vs 1,000 ms)"),
        (1000.0, 1030.0, "bidi and batch first audio about the same (1,030 vs 1,000 ms)"),
        (1000.0, None, "no audio in one of the modes, no ratio"),
        (None, None, "no audio in either mode, no ratio"),
    ],
)
def test_the_comparison_says_sooner_later_or_about_the_same(
    batch_ms: float | None, bidi_ms: float | None, says: str
) -> None:
    assert comparison(batch_ms, bidi_ms) == says


def test_no_comparison_line_when_only_one_mode_ran() -> None:
    assert speedup_line([_record("bidi", [(400, 900)])]) is None
    later = speedup_line([_record("bidi", [(900, 900)]), _record("batch", [(600, 900)])])
    assert later is not None and "later than batch" in later and "sooner" not in later


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
    assert "pauses added by cuts" in table([record])
