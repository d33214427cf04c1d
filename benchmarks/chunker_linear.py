"""Show that the chunker costs linear time: 100 KB with no punctuation, fed token by token.

A chunker that re-searches its buffer from the start on every feed costs O(n^2) on a long unfinished
sentence; ours keeps a scan position, so each feed costs O(fragment). The script feeds sizes from
12.5 KB to 200 KB and prints total time, time per KB and the mean cost of a feed in each tenth of the
100 KB run (flat = linear). Totals are the best of 3 runs and per-feed costs are medians, because
the machine is shared. A naive rescanning chunker is timed alongside (up to 50 KB) for contrast.

    uv run python benchmarks/chunker_linear.py
"""

from __future__ import annotations

import json
import random
import re
import sys
import time
from pathlib import Path

from benchmarks.machine import load_average, results_path
from strands_kokoro.text.chunker import IncrementalSentenceChunker

RESULTS = Path(__file__).resolve().parent / "results" / "chunker_linear.json"
_NAIVE_END = re.compile(r"[.!?](?:\s|$)")


def tokens_without_punctuation(n_chars: int, seed: int = 0) -> list[str]:
    """LLM-like tokens (a word piece with its leading space, 1-8 characters), no terminal marks."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    out: list[str] = []
    total = 0
    while total < n_chars:
        word = "".join(rng.choice(letters) for _ in range(rng.randint(1, 7)))
        token = " " + word if rng.random() < 0.7 else word
        out.append(token)
        total += len(token)
    return out


def time_feeds(tokens: list[str], **options: int) -> list[float]:
    """Seconds spent in each feed call."""
    chunker = IncrementalSentenceChunker(**options)
    costs = []
    clock = time.perf_counter
    for token in tokens:
        t0 = clock()
        chunker.feed(token)
        costs.append(clock() - t0)
    chunker.flush()
    return costs


def time_naive(tokens: list[str]) -> float:
    """The seed's approach: append, then search the whole buffer again."""
    buf = ""
    t0 = time.perf_counter()
    for token in tokens:
        buf += token
        m = _NAIVE_END.search(buf)
        if m:
            buf = buf[m.end() :]
    return time.perf_counter() - t0


def main() -> int:
    out = results_path(RESULTS)
    load_before = load_average()
    sizes = [12_500, 25_000, 50_000, 100_000, 200_000]
    rows: list[dict[str, float]] = []
    print(f"{'size':>8} {'tokens':>7} {'chunker s':>10} {'us/KB':>8} {'max_chars=350 s':>16} {'naive s':>9}")
    for size in sizes:
        tokens = tokens_without_punctuation(size)
        total = min(sum(time_feeds(tokens)) for _ in range(3))
        capped = min(sum(time_feeds(tokens, max_chars=350)) for _ in range(3))
        naive = time_naive(tokens) if size <= 50_000 else None
        per_kb = total / (size / 1000) * 1e6
        rows.append(
            {
                "chars": size,
                "tokens": len(tokens),
                "seconds": total,
                "us_per_kb": per_kb,
                "seconds_max_chars_350": capped,
            }
        )
        if naive is not None:
            rows[-1]["naive_rescan_seconds"] = naive
        naive_text = f"{naive:>9.4f}" if naive is not None else f"{'-':>9}"
        print(f"{size:>8} {len(tokens):>7} {total:>10.4f} {per_kb:>8.1f} {capped:>16.4f} {naive_text}")

    tokens = tokens_without_punctuation(100_000)
    costs = time_feeds(tokens)
    tenth = len(costs) // 10
    deciles = [sorted(costs[i * tenth : (i + 1) * tenth])[tenth // 2] * 1e6 for i in range(10)]
    print("\nmedian feed cost (us) by position in the 100 KB sentence, first tenth .. last tenth:")
    print(" ".join(f"{d:.2f}" for d in deciles))
    ratio = deciles[-1] / deciles[0]
    growth = rows[3]["seconds"] / rows[2]["seconds"]
    print(f"last/first tenth: {ratio:.2f}x (1.0 = linear)")
    print(f"100 KB / 50 KB total time: {growth:.2f}x (2.0 = linear)")
    naive_50 = rows[2]["naive_rescan_seconds"]
    print(f"naive rescan at 50 KB: {naive_50 / rows[2]['seconds']:.0f}x the chunker's time")

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "sizes": rows,
                "feed_cost_us_by_tenth_100kb": deciles,
                "last_over_first_tenth": ratio,
                "time_100kb_over_50kb": growth,
                "load_average_before": load_before,
                "load_average_after": load_average(),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
