"""Score the streaming sentence chunker on the public English test sets, three ways of feeding it.

Sets (copied into tests/strands_kokoro/chunker_data/, MIT): pySBD's 48 Golden Rules and sentencex's
236 English cases. A case passes when the chunker's sentences equal the expected ones after collapsing
whitespace runs and dropping empty segments. Each case is fed whole, one character at a time, and in
random token-sized fragments (seeded); the chunker promises the same output for all three.

    uv run python benchmarks/chunker_scores.py [--seed N] [--show-failures]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from benchmarks.machine import load_average, results_path
from strands_kokoro.text.chunker import IncrementalSentenceChunker

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "strands_kokoro" / "chunker_data"
RESULTS = ROOT / "benchmarks" / "results" / "chunker_scores.json"


def load_cases(name: str) -> list[tuple[str, list[str]]]:
    """(input, expected sentences) pairs of ``golden`` or ``sentencex`` (its ``en`` cases only)."""
    if name == "golden":
        data = json.loads((DATA / "golden_rules_en.json").read_text())["cases"]
    else:
        data = json.loads((DATA / "sentencex_en.json").read_text())["en"]
    return [(case["input"], case["expected"]) for case in data]


def normalise(segments: Iterable[str]) -> list[str]:
    out = [re.sub(r"\s+", " ", s).strip() for s in segments]
    return [s for s in out if s]


def whole(text: str, rng: random.Random) -> list[str]:
    return [text]


def one_char(text: str, rng: random.Random) -> list[str]:
    return list(text)


def random_tokens(text: str, rng: random.Random) -> list[str]:
    """Token-sized pieces (1-8 characters), like an LLM's stream."""
    pieces, i = [], 0
    while i < len(text):
        n = rng.randint(1, 8)
        pieces.append(text[i : i + n])
        i += n
    return pieces


FEEDS: dict[str, Callable[[str, random.Random], list[str]]] = {
    "whole": whole,
    "one_char": one_char,
    "random": random_tokens,
}


def segment(pieces: list[str]) -> list[str]:
    chunker = IncrementalSentenceChunker()
    out: list[str] = []
    for piece in pieces:
        out.extend(chunker.feed(piece))
    return out + chunker.flush()


def score(name: str, feed: str, seed: int) -> tuple[int, int, list[tuple[str, list[str], list[str]]]]:
    rng = random.Random(seed)
    cases = load_cases(name)
    failures = []
    for text, expected in cases:
        got = normalise(segment(FEEDS[feed](text, rng)))
        if got != normalise(expected):
            failures.append((text, normalise(expected), got))
    return len(cases) - len(failures), len(cases), failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seed for the random fragmentation")
    parser.add_argument("--show-failures", action="store_true", help="print each failing case")
    args = parser.parse_args(argv)
    out = results_path(RESULTS)
    results: dict[str, dict[str, int]] = {}
    print(f"{'set':<10} {'whole':>9} {'one_char':>9} {'random':>9}")
    for name in ("golden", "sentencex"):
        row = {}
        for feed in FEEDS:
            passed, total, failures = score(name, feed, args.seed)
            row[feed] = passed
            if args.show_failures and feed == "random":
                for text, expected, got in failures:
                    print(f"  FAIL {text!r}\n    expected {expected}\n    got      {got}")
        results[name] = {**row, "total": total}
        print(f"{name:<10} " + " ".join(f"{row[f]:>5}/{total:<3}" for f in FEEDS))
    out.parent.mkdir(parents=True, exist_ok=True)
    # Scores do not depend on the load; it is recorded like every benchmark's so no reader has to ask.
    record = {"seed": args.seed, "scores": results, "load_average": load_average()}
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
