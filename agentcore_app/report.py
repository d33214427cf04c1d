"""What the demo leaves behind: a table per mode, one WAV per mode, a timeline PNG and a JSON file.

Kept apart from the demo's orchestration so the benchmark and the browser helper can reuse the same
numbers and pictures. WAVs use the stdlib ``wave`` module; the figure uses matplotlib's Agg backend, so it
renders on a machine without a display.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
import wave
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentcore_app.client import TurnRecord


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def _fmt_count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _fmt_rtf(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def speedup(batch_ms: float | None, bidi_ms: float | None) -> float | None:
    """How many times sooner bidi's first audio came than batch's (None when either has no audio)."""
    if not batch_ms or not bidi_ms:
        return None
    return batch_ms / bidi_ms


def chunk_timeline(record: TurnRecord) -> list[tuple[float, float]]:
    """(arrival ms, audio length ms) of every audio chunk, in arrival order.

    A compressed chunk's length is its share of the turn's decoded audio by bytes (exact for PCM; for
    Opus and MP3, whose frames vary little in size, close enough for the stall estimate).
    """
    chunks = record.of_type("audio_chunk")
    sizes = record.chunk_bytes
    total_ms = record.audio_s * 1000.0
    total_bytes = sum(sizes) or 1
    if record.audio_format != "pcm_s16le":
        return [(c.at_ms, total_ms * n / total_bytes) for c, n in zip(chunks, sizes, strict=True)]
    return [
        (c.at_ms, n / 2 / int(c.event.get("sample_rate", record.sample_rate)) * 1000.0)
        for c, n in zip(chunks, sizes, strict=True)
    ]


def stall_ms(record: TurnRecord) -> float:
    """Silence a real-time player would have after starting at the first audio byte (architecture §7).

    The player starts with the first chunk; a chunk that arrives after the audio queued before it has
    finished playing leaves a gap, and the gaps add up.
    """
    play_end: float | None = None
    stalled = 0.0
    for arrival, duration in chunk_timeline(record):
        if play_end is None:
            play_end = arrival
        stalled += max(0.0, arrival - play_end)
        play_end = max(play_end, arrival) + duration
    return stalled


# A join after one of these is one a reader pauses at too (a sentence's end, a clause's comma or colon):
# its silence is the text's, not the cut's (the same sentence spoken whole has it).
_PAUSE_MARKS = (".", "!", "?", "…", '"', "”", "'", ")", ",", ";", ":", "—", "–", "-")
QUIET_DB = -40.0  # below this a 10 ms frame counts as silence


def cut_pauses_ms(record: TurnRecord) -> list[float]:
    """The silence at every join between two requests of one sentence, where the pacer cut it between two
    words (not at a comma or colon, where a reader pauses and the whole sentence has the same pause).

    A reader does not pause between two words of a clause, so whatever silence is at such a join was
    added by the cut: the run of 10 ms frames below -40 dBFS that reaches the join (from 20 ms either
    side of it, at most one second each way).
    """
    samples = array("h", bytes(record.pcm[: len(record.pcm) // 2 * 2]))  # s16 in the machine's order
    if sys.byteorder == "big":
        samples.byteswap()
    frame = record.sample_rate // 100

    def quiet(start: int) -> bool:
        if start < 0 or start + frame > len(samples):
            return False
        power = sum(v * v for v in samples[start : start + frame]) / frame / 32767**2
        return 10 * math.log10(power + 1e-18) < QUIET_DB

    pauses, position_ms = [], 0.0
    completes = [e.event for e in record.of_type("sentence_complete")]
    for complete, following in itertools.pairwise(completes):
        position_ms += float(complete.get("audio_ms") or 0.0)
        if str(complete.get("text", "")).rstrip().endswith(_PAUSE_MARKS) or not following.get("audio_ms"):
            continue
        at = round(position_ms * record.sample_rate / 1000)
        before = next((k for k in range(2, 100) if not quiet(at - k * frame)), 100) - 2
        after = next((k for k in range(2, 100) if not quiet(at + (k - 1) * frame)), 100) - 2
        pauses.append(10.0 * (before + after))
    return pauses


def _fmt_pauses(pauses: Sequence[float]) -> str:
    if not pauses:
        return "none"
    return f"{len(pauses)}: {statistics.median(pauses):,.0f} / {max(pauses):,.0f} ms"


def table(records: Sequence[TurnRecord], *, labels: Sequence[str] | None = None) -> str:
    """A plain-text table: one column per record (headed by its mode, or ``labels``), one row per measure."""
    summaries = [r.summary() for r in records]
    rows = [
        ("time to first text", [_fmt_ms(s["first_text_ms"]) for s in summaries]),
        ("time to first audio", [_fmt_ms(s["first_audio_ms"]) for s in summaries]),
        ("total", [_fmt_ms(s["total_ms"]) for s in summaries]),
        ("audio", [f"{s['audio_s']:.2f} s" for s in summaries]),
        ("audio chunks", [str(s["chunks"]) for s in summaries]),
        ("playback stall", [_fmt_ms(stall_ms(r)) for r in records]),
        ("pauses added by cuts (n: median / max)", [_fmt_pauses(cut_pauses_ms(r)) for r in records]),
        ("speech requests", [_fmt_count(s["requests"]) for s in summaries]),
        ("engine RTF (measured)", [_fmt_rtf(s["rtf"] if s["audio_s"] else None) for s in summaries]),
    ]
    label_width = max(len(label) for label, _ in rows)
    col_width = max(12, *(len(v) for _, values in rows for v in values))
    heads = list(labels) if labels is not None else [s["mode"] for s in summaries]
    col_width = max(col_width, *(len(head) for head in heads))
    header = " " * label_width + "".join(f"  {head:>{col_width}}" for head in heads)
    lines = [header, "-" * len(header)]
    lines += [
        f"{label:<{label_width}}" + "".join(f"  {v:>{col_width}}" for v in values) for label, values in rows
    ]
    return "\n".join(lines)


SAME_WITHIN = 0.05
"""First audios within 5 % of each other read as "about the same": the one-decimal ratio would say 1.0×."""


def comparison(batch_ms: float | None, bidi_ms: float | None) -> str:
    """Bidi's first audio against batch's, in words: sooner (×), later, or about the same."""
    ratio = speedup(batch_ms, bidi_ms)
    if ratio is None or batch_ms is None or bidi_ms is None:
        which = "either mode" if batch_ms is None and bidi_ms is None else "one of the modes"
        return f"no audio in {which}, no ratio"
    if ratio >= 1 + SAME_WITHIN:
        return f"bidi first audio is {ratio:.1f}× sooner than batch"
    both = f"{bidi_ms:,.0f} vs {batch_ms:,.0f} ms"
    if ratio <= 1 / (1 + SAME_WITHIN):
        return f"bidi first audio is later than batch ({both}: {1 / ratio:.1f}× as long)"
    return f"bidi and batch first audio about the same ({both})"


def speech_wait_ms(summary: Mapping[str, Any]) -> float | None:
    """First audio counted from the model's first words: what the speech path adds, bidi against batch.

    Why not from the request: the modes of one comparison run one after the other on the same prompt,
    and the second finds it in the local model's prompt cache (its first words came ~50 ms after the
    request where the first mode's took ~450), which would credit the cache to whichever mode ran second.
    """
    audio, text = summary["first_audio_ms"], summary["first_text_ms"]
    if audio is None:
        return None
    return audio - (text or 0.0)


def compared_turns(batch: Mapping[str, Any], bidi: Mapping[str, Any]) -> str:
    """:func:`comparison` of two turns' summaries, from the model's first words (:func:`speech_wait_ms`)."""
    batch_ms, bidi_ms = speech_wait_ms(batch), speech_wait_ms(bidi)
    said = comparison(batch_ms, bidi_ms)
    return said if batch_ms is None or bidi_ms is None else f"{said}, counted from the model's first words"


def speedup_line(records: Sequence[TurnRecord]) -> str | None:
    """The comparison line, or None when one of the modes did not run (nothing to compare with)."""
    by_mode = {r.mode: r.summary() for r in records}
    if "bidi" not in by_mode or "batch" not in by_mode:
        return None
    return compared_turns(by_mode["batch"], by_mode["bidi"])


def answer_lines(records: Sequence[TurnRecord]) -> list[str]:
    """Each mode's answer, labelled with its mode; one line when every mode said the same."""
    answers = {record.mode: record.text.strip() or "(no text)" for record in records}
    if len(answers) > 1 and len(set(answers.values())) == 1:
        return [f"answer ({', '.join(answers)}): {next(iter(answers.values()))}"]
    return [f"{mode} answer: {text}" for mode, text in answers.items()]


def write_wav(record: TurnRecord, path: Path) -> Path:
    """The turn's audio as 16-bit mono WAV at the stream's sample rate."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(record.sample_rate)
        wav.writeframes(bytes(record.pcm))
    return path


def concatenated(records: Sequence[TurnRecord]) -> TurnRecord:
    """One record holding the audio of ``records`` in order (a conversation's turns as one WAV)."""
    joined = TurnRecord(
        mode=records[0].mode if records else "", sample_rate=records[0].sample_rate if records else 24_000
    )
    for record in records:
        joined.pcm += record.pcm
    return joined


def write_timeline(records: Sequence[TurnRecord], path: Path, *, labels: Sequence[str] | None = None) -> Path:
    """Text deltas and audio chunks against time, one lane pair per record (titled by mode or ``labels``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(records), 1, figsize=(11, 1.9 * len(records) + 0.8), sharex=True, squeeze=False
    )
    titles = list(labels) if labels is not None else [record.mode for record in records]
    for ax, record, title in zip(axes[:, 0], records, titles, strict=True):
        text_times = [e.at_ms for e in record.of_type("text_delta")]
        ax.vlines(text_times, 1.6, 2.4, color="tab:blue", linewidth=0.8, label="text delta")
        ax.broken_barh(
            chunk_timeline(record), (0.6, 0.8), facecolors="tab:orange", edgecolor="black", linewidth=0.3
        )
        first_audio = record.first("audio_chunk")
        if first_audio is not None:
            ax.axvline(first_audio.at_ms, color="tab:red", linestyle="--", linewidth=1)
            ax.annotate(
                f"first audio {first_audio.at_ms:,.0f} ms",
                (first_audio.at_ms, 2.55),
                fontsize=8,
                color="tab:red",
                xytext=(4, 0),
                textcoords="offset points",
            )
        ax.set_yticks([1.0, 2.0], ["audio chunks\n(arrival, length)", "text deltas"])
        ax.set_ylim(0.3, 2.9)
        ax.set_title(title, loc="left", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("ms since the request was sent")
    fig.suptitle("agent text and speech audio as the client receives them")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def results_json(records: Sequence[TurnRecord], extra: dict[str, Any]) -> dict[str, Any]:
    """The demo's numbers for ``--json``: each mode's summary, and the speed-up the printed line says
    (from the model's first words, :func:`speech_wait_ms`)."""
    by_mode = {r.mode: r.summary() for r in records}
    ratio = None
    if "batch" in by_mode and "bidi" in by_mode:
        ratio = speedup(speech_wait_ms(by_mode["batch"]), speech_wait_ms(by_mode["bidi"]))
    for record in records:
        by_mode[record.mode]["stall_ms"] = round(stall_ms(record), 1)
        by_mode[record.mode]["cut_pauses_ms"] = cut_pauses_ms(record)
    return {**extra, "modes": by_mode, "bidi_first_audio_speedup": None if ratio is None else round(ratio, 2)}


def write_json(data: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path
