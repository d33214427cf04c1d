"""Text normalization: this project's rules against other normalizers, on the project's test set.

Per normalizer: cases right, strict and lenient (forgiving "and", "the", "of", "a", "oh" for zero and
spelled letters apart or together), p50/p95 latency per sentence, start-up time, installed size and
licence. Ours runs in-process; the candidates (``nemo-text-processing``, ``wetextprocessing``) under
another interpreter (``--candidates PYTHON``, never the project's environment), through
``benchmarks/normalization_candidates.py``. Writes ``benchmarks/results/normalization.json`` with the
load at the start and the end.

    uv run python -m benchmarks.normalization [--candidates /tmp/norm-eval/bin/python] [--repeats N]
        [--nemo-cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.machine import results_path
from benchmarks.normalization_candidates import installed_mb, licence, run_cases
from benchmarks.speech_check import words

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "normalization.json"
FORGIVEN = frozenset({"and", "the", "of", "a"})


def said(text: str, *, lenient: bool) -> list[str]:
    """The words a text says, for comparison; lenient: without the small words normalizers differ on."""
    spoken = words(text)
    if not lenient:
        return spoken
    joined: list[str] = []
    run = ""
    for word in [*spoken, ""]:
        if len(word) == 1 and word.isalpha():
            run += word  # a run of spelled letters: "p m" is "pm"
            continue
        if run:
            joined.append(run)
            run = ""
        if word:
            joined.append(word)
    return ["zero" if w in ("oh", "o") else w for w in joined if w not in FORGIVEN]


def coverage(outputs: list[str], expected: list[str]) -> dict[str, Any]:
    strict = [
        said(o, lenient=False) == said(e, lenient=False) for o, e in zip(outputs, expected, strict=True)
    ]
    lenient = [said(o, lenient=True) == said(e, lenient=True) for o, e in zip(outputs, expected, strict=True)]
    return {"strict": sum(strict), "lenient": sum(lenient), "total": len(expected), "passed": lenient}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def ours(cases: list[str], repeats: int) -> dict[str, Any]:
    """This project's normalizer, timed in this process; its start-up in a fresh one."""
    startup = subprocess.run(
        [sys.executable, "-c", _STARTUP_PROBE], capture_output=True, text=True, check=True, cwd=ROOT
    )
    from tts_container.text.normalization.normalizer import normalize

    outputs, latencies = run_cases(normalize, cases, repeats)
    return {
        "name": "strands-kokoro rules",
        "version": "this checkout",
        "licence": "Apache-2.0 (num2words: " + licence("num2words") + ")",
        "installed_mb": round(installed_mb("num2words"), 1),
        "installed_note": "num2words is already installed by misaki[en]: nothing added",
        "startup_s": round(float(startup.stdout.strip()), 3),
        "outputs": outputs,
        "latencies_ms": latencies,
    }


_STARTUP_PROBE = """
import time
began = time.perf_counter()
from tts_container.text.normalization.normalizer import normalize
normalize("Warm up at 3:45 pm for $5.")
print(time.perf_counter() - began)
"""


def candidates(python: str, cases: list[str], repeats: int, nemo_cache: str) -> list[dict[str, Any]]:
    script = ROOT / "benchmarks" / "normalization_candidates.py"
    done = subprocess.run(
        [python, str(script), "--repeats", str(repeats), "--cache-dir", nemo_cache],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        cwd="/tmp",
    )
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidates", metavar="PYTHON", help="an interpreter with the candidates installed")
    parser.add_argument("--repeats", type=int, default=20, help="timed runs of each case (default 20)")
    parser.add_argument(
        "--nemo-cache",
        default="/tmp/norm-eval-work/nemo-cache",
        help="NeMo's grammar cache; an empty folder measures compiling the grammars",
    )
    parser.add_argument("--show-failures", action="store_true")
    args = parser.parse_args()
    out = results_path(RESULTS)
    from tests.tts_container.normalization_cases import CASES

    load_before = os.getloadavg()
    written = [w for _, w, _ in CASES]
    expected = [e for _, _, e in CASES]
    rows = [ours(written, args.repeats)]
    if args.candidates:
        rows += candidates(args.candidates, written, max(1, args.repeats // 4), args.nemo_cache)
    load_after = os.getloadavg()

    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)")
    columns = ("strict", "lenient", "p50 ms", "p95 ms", "start s", "MB")
    widths = (9, 9, 8, 8, 8, 7)
    print(
        f"{'normalizer':24s} "
        + " ".join(f"{c:>{w}s}" for c, w in zip(columns, widths, strict=True))
        + "  licence"
    )
    summary = []
    for row in rows:
        if "error" in row:
            print(f"{row['name']:24s} {row['error']}")
            summary.append(row)
            continue
        score = coverage(row["outputs"], expected)
        p50, p95 = statistics.median(row["latencies_ms"]), percentile(row["latencies_ms"], 0.95)
        strict, lenient, total = score["strict"], score["lenient"], score["total"]
        print(
            f"{row['name']:24s} {strict:>4d}/{total:<4d} {lenient:>4d}/{total:<4d} {p50:8.3f} {p95:8.3f}"
            f" {row['startup_s']:8.2f} {row['installed_mb']:7.1f}  {row['licence']}"
        )
        by_category: dict[str, list[int]] = {}
        for (category, _, _), passed in zip(CASES, score["passed"], strict=True):
            by_category.setdefault(category, [0, 0])
            by_category[category][0] += int(passed)
            by_category[category][1] += 1
        if args.show_failures:
            for (category, text, want), got, passed in zip(
                CASES, row["outputs"], score["passed"], strict=True
            ):
                if not passed:
                    print(f"    [{category}] {text!r}\n        got  {got!r}\n        want {want!r}")
        summary.append(
            {
                **{k: v for k, v in row.items() if k not in ("outputs", "latencies_ms")},
                "coverage_strict": score["strict"],
                "coverage_lenient": score["lenient"],
                "cases": score["total"],
                "by_category_lenient": by_category,
                "p50_ms": round(p50, 4),
                "p95_ms": round(p95, 4),
                "timed_runs": len(row["latencies_ms"]),
            }
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "loadavg_before": load_before,
                "loadavg_after": load_after,
                "cpu_count": os.cpu_count(),
                "repeats": args.repeats,
                "normalizers": summary,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
