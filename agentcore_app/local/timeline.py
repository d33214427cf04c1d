"""The demo's timeline chart: per mode, the text as the LLM wrote it and, under it, what the listener hears.

One panel per turn, all on one time axis (seconds since the request was sent), so the modes compare at a
glance. The upper lane is the answer growing as it was written (its share of the whole answer's
characters). The lower lane is a real-time player fed by the audio as it arrived
(:mod:`agentcore_app.local.playback`): grey while the listener waits for the first sound, then the audio's
loudness where it plays (a pause between sentences is a flat stretch), red where the player ran dry (a
stall), and each sentence's first words where it begins to be heard. matplotlib's Agg backend renders it
without a display.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentcore_app.local.playback import playback
from agentcore_app.local.turn_record import TurnRecord

ENVELOPE_MS = 20.0  # loudness is drawn per 20 ms of audio
TEXT_COLOR, AUDIO_COLOR, WAIT_COLOR, STALL_COLOR = "tab:blue", "tab:green", "0.85", "tab:red"


def loudness(record: TurnRecord) -> list[float]:
    """The turn's audio as 0..1 per :data:`ENVELOPE_MS` (RMS on a 60 dB scale: silence is 0)."""
    samples = array("h", bytes(record.pcm[: len(record.pcm) // 2 * 2]))
    if sys.byteorder == "big":
        samples.byteswap()
    frame = max(1, round(record.sample_rate * ENVELOPE_MS / 1000))
    levels = []
    for start in range(0, len(samples), frame):
        window = samples[start : start + frame]
        power = sum(v * v for v in window) / max(1, len(window)) / 32767**2
        levels.append(max(0.0, min(1.0, (10 * math.log10(power + 1e-12) + 60) / 60)))
    return levels


def _first_words(text: str, words: int = 3) -> str:
    said = text.split()
    return " ".join(said[:words]) + (" …" if len(said) > words else "")


def _text_lane(ax: Any, record: TurnRecord, base: float) -> None:
    deltas = record.of_type("text_delta")
    total = sum(len(d.event.get("text", "")) for d in deltas) or 1
    written, times, shares = 0, [0.0], [0.0]
    for delta in deltas:
        written += len(delta.event.get("text", ""))
        times.append(delta.at_ms / 1000)
        shares.append(written / total)
    ax.fill_between(
        times, base, [base + 0.8 * share for share in shares], step="post", color=TEXT_COLOR, alpha=0.35
    )
    if deltas:
        end = deltas[-1].at_ms
        ax.annotate(f"answer written {end:,.0f} ms", (end / 1000, base + 0.82), fontsize=7, color=TEXT_COLOR)


def _shade(ax: Any, start_ms: float, end_ms: float, base: float, color: str) -> None:
    ax.fill_between([start_ms / 1000, end_ms / 1000], base, base + 0.8, color=color, alpha=0.5, linewidth=0)


def _audio_lane(ax: Any, record: TurnRecord, base: float, label_gap_ms: float) -> None:
    """Labels closer than ``label_gap_ms`` to the one before are left out: they would overlap."""
    heard = playback(record)
    if not heard.blocks:
        ax.text(0.0, base + 0.4, "no audio", fontsize=8, color=STALL_COLOR)
        return
    first = heard.blocks[0].start_ms
    _shade(ax, 0.0, first, base, WAIT_COLOR)
    ax.annotate(f"first audio {first:,.0f} ms", (first / 1000, base + 0.85), fontsize=8, color="black")
    levels = loudness(record)
    middle = base + 0.4
    for block in heard.blocks:
        first_frame = int(block.audio_ms / ENVELOPE_MS)
        count = max(1, int((block.end_ms - block.start_ms) / ENVELOPE_MS))
        xs = [(block.start_ms + k * ENVELOPE_MS) / 1000 for k in range(count)]
        ys = [levels[first_frame + k] * 0.38 if first_frame + k < len(levels) else 0.0 for k in range(count)]
        ax.fill_between(
            xs, [middle - y for y in ys], [middle + y for y in ys], color=AUDIO_COLOR, linewidth=0
        )
    for start, end in heard.stalls:
        _shade(ax, start, end, base, STALL_COLOR)
        ax.annotate(
            f"stall {end - start:,.0f} ms", (start / 1000, base + 0.02), fontsize=7, color=STALL_COLOR
        )
    position, labelled = 0.0, -math.inf
    for complete in record.of_type("sentence_complete"):
        at = heard.heard_at(position)
        text = str(complete.event.get("text", ""))
        if at is not None and text.strip() and at - labelled >= label_gap_ms:
            labelled = at
            ax.annotate(_first_words(text), (at / 1000, base - 0.12), fontsize=6, color="0.3", rotation=0)
        position += float(complete.event.get("audio_ms") or 0.0)


def write_timeline(records: Sequence[TurnRecord], path: Path, *, labels: Sequence[str] | None = None) -> Path:
    """One panel per record (titled by its mode or ``labels``): the text as written over what is heard."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(records), 1, figsize=(12, 2.2 * len(records) + 0.9), sharex=True, squeeze=False
    )
    titles = list(labels) if labels is not None else [record.mode for record in records]
    ends = [event.at_ms for record in records for event in record.events[-1:]]
    label_gap_ms = max(ends, default=0.0) / 12
    for ax, record, title in zip(axes[:, 0], records, titles, strict=True):
        _text_lane(ax, record, 1.0)
        _audio_lane(ax, record, 0.0, label_gap_ms)
        stalls = playback(record).stalls
        if stalls:
            title += f": {len(stalls)} stalls, {sum(end - start for start, end in stalls):,.0f} ms in all"
        ax.set_yticks([0.4, 1.4], ["what the listener hears", "text as written"])
        ax.set_ylim(-0.2, 2.0)
        ax.set_xlim(left=0)
        ax.set_title(title, loc="left", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since the request was sent")
    fig.suptitle(
        "text as the agent wrote it, and what the listener hears "
        "(grey: waiting for the first sound, green: audio, red: stall)",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
