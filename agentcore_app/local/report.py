"""What the demo leaves behind: a table per mode, one WAV per mode, a timeline PNG and a JSON file.

Every time in the table and the JSON is counted from the moment the request was sent: what a listener
waits. Kept apart from the demo's orchestration so benchmarks can reuse the same numbers; the playback
model is :mod:`agentcore_app.local.playback`, the chart :mod:`agentcore_app.local.timeline`. WAVs use the
stdlib ``wave`` module.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
import wave
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcore_app.local.playback import stall_ms
from agentcore_app.local.turn_record import TurnRecord

TIMES_FROM = "the moment the request was sent"
"""What every ``*_ms`` time of the table and the JSON is counted from."""


@dataclass(frozen=True, slots=True)
class LlmSetting:
    """Which LLM answered and how fast it was let write: printed above the table and saved in the JSON.

    ``pace_tokens_per_s``: the launcher released the model's tokens no faster than that (``--llm-pace``);
    None: the model's own speed. ``prompt_cache``: what every turn found already read, ``"system
    prompt"`` when each turn read the rest of its prompt fresh (both modes from the same model state);
    None when the demo cannot know (an app it did not start).
    """

    model: str
    pace_tokens_per_s: float | None = None
    prompt_cache: str | None = None

    def line(self) -> str:
        speed = (
            f"its tokens released at most {self.pace_tokens_per_s:g} per second (--llm-pace), as a hosted "
            "model streams"
            if self.pace_tokens_per_s
            else "at its own speed"
        )
        said = f"LLM: {self.model}, {speed}"
        if self.prompt_cache is not None:
            said += (
                f"; prompt cache: the {self.prompt_cache} only, every turn reads the rest fresh, so both "
                "modes start alike"
            )
        return said

    def recorded(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "pace_tokens_per_s": self.pace_tokens_per_s,
            "prompt_cache": self.prompt_cache,
        }


THE_APPS_OWN = LlmSetting("the agent app's own model (its STRANDS_KOKORO_MODEL)")


def _fmt_ms(value: Any) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def _fmt_count(value: Any) -> str:
    return "-" if value is None else f"{value:g}"


def _fmt_rtf(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def _fmt_s(value: Any) -> str:
    return "-" if value is None else f"{value:.2f} s"


def speedup(batch_ms: float | None, bidi_ms: float | None) -> float | None:
    """How many times sooner bidi's first audio came than batch's (None when either has no audio)."""
    if not batch_ms or not bidi_ms:
        return None
    return batch_ms / bidi_ms


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


def _fmt_pauses(pauses: Any) -> str:
    if not pauses:
        return "none"
    return f"{len(pauses)}: {statistics.median(pauses):,.0f} / {max(pauses):,.0f} ms"


def measures(record: TurnRecord) -> dict[str, Any]:
    """One turn's numbers: the client's summary, when the answer was fully written (the last text) and
    the last audio arrived, the playback stalls and the pauses the pacer's cuts added."""
    texts, chunks = record.of_type("text_delta"), record.of_type("audio_chunk")
    summary = record.summary()
    audio = summary["audio_s"] if summary["audio_s"] else None
    return {
        **summary,
        "answer_written_ms": round(texts[-1].at_ms, 1) if texts else None,
        "last_audio_ms": round(chunks[-1].at_ms, 1) if chunks else None,
        "rtf": summary["rtf"] if audio else None,
        "stall_ms": round(stall_ms(record), 1) if chunks else None,
        "cut_pauses_ms": cut_pauses_ms(record),
    }


MEDIAN_FIELDS = (
    "first_text_ms",
    "answer_written_ms",
    "first_audio_ms",
    "last_audio_ms",
    "total_ms",
    "audio_s",
    "chunks",
    "requests",
    "rtf",
    "stall_ms",
)


def median_measures(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The median of every number over ``runs`` of one mode (a field no run has stays None); the cut
    pauses of all runs pooled; ``runs``: how many."""
    median: dict[str, Any] = {"runs": len(runs)}
    for name in MEDIAN_FIELDS:
        values = [run[name] for run in runs if run.get(name) is not None]
        median[name] = round(statistics.median(values), 3) if values else None
    median["cut_pauses_ms"] = [pause for run in runs for pause in run.get("cut_pauses_ms", [])]
    median["errors"] = [error for run in runs for error in run.get("errors", [])]
    return median


ROWS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("LLM: first words", "first_text_ms", _fmt_ms),
    ("LLM: whole answer written", "answer_written_ms", _fmt_ms),
    ("first audio (what the listener waits)", "first_audio_ms", _fmt_ms),
    ("last audio arrived", "last_audio_ms", _fmt_ms),
    ("audio length", "audio_s", _fmt_s),
    ("playback stalls after first audio", "stall_ms", _fmt_ms),
    ("pauses added by cuts (n: median / max)", "cut_pauses_ms", _fmt_pauses),
    ("speech requests", "requests", _fmt_count),
    ("engine real-time factor (<1: faster)", "rtf", _fmt_rtf),
)


def table(columns: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """A plain-text table: one column per (heading, :func:`measures` or :func:`median_measures`), one
    row per measure; its corner says what the times are counted from."""
    corner = f"times since {TIMES_FROM}"
    rows = [(label, [fmt(column.get(key)) for _, column in columns]) for label, key, fmt in ROWS]
    label_width = max(len(corner), *(len(label) for label, _ in rows))
    heads = [head for head, _ in columns]
    col_width = max(12, *(len(v) for _, values in rows for v in values), *(len(h) for h in heads))
    header = f"{corner:<{label_width}}" + "".join(f"  {head:>{col_width}}" for head in heads)
    lines = [header, "-" * len(header)]
    lines += [
        f"{label:<{label_width}}" + "".join(f"  {v:>{col_width}}" for v in values) for label, values in rows
    ]
    return "\n".join(lines)


def record_columns(
    records: Sequence[TurnRecord], labels: Sequence[str] | None = None
) -> list[tuple[str, Any]]:
    """One table column per record, headed by its mode or ``labels``."""
    heads = list(labels) if labels is not None else [record.mode for record in records]
    return [(head, measures(record)) for head, record in zip(heads, records, strict=True)]


SAME_WITHIN = 0.05
"""First audios within 5 % of each other read as "about as soon": the one-decimal ratio would say 1.0×."""


def comparison(batch_ms: float | None, bidi_ms: float | None) -> str:
    """Bidi's first audio against batch's, both counted from the request: sooner (×), later, or about
    as soon, with both times."""
    ratio = speedup(batch_ms, bidi_ms)
    if ratio is None or batch_ms is None or bidi_ms is None:
        which = "either mode" if batch_ms is None and bidi_ms is None else "one of the modes"
        return f"no audio in {which}, no ratio"
    both = f"first audio {bidi_ms:,.0f} vs {batch_ms:,.0f} ms after the request"
    if ratio >= 1 + SAME_WITHIN:
        return f"bidi spoke {ratio:.1f}× sooner than batch: {both}"
    if ratio <= 1 / (1 + SAME_WITHIN):
        return f"bidi spoke later than batch: {both}"
    return f"bidi and batch spoke about as soon: {both}"


def headline(by_mode: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The comparison of the modes' (median) first audio, or None when one of the modes did not run."""
    if "bidi" not in by_mode or "batch" not in by_mode:
        return None
    return comparison(by_mode["batch"]["first_audio_ms"], by_mode["bidi"]["first_audio_ms"])


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


def write_json(data: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path
