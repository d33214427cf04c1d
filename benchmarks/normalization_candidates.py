"""Run other text normalizers over the normalization test set, under another Python environment.

``benchmarks/normalization.py --candidates PYTHON`` starts this script with an interpreter whose
environment has the candidates installed (they are not project dependencies: pynini alone is ~650 MB),
feeds it the written cases as JSON on stdin and reads one JSON object back: per candidate, its licence,
installed size, start-up time (import + construction; compilation when its grammar cache was empty),
every case's output and per-sentence latencies. Standard library only, besides the candidates.

Candidates: NVIDIA's ``nemo-text-processing`` (English TN grammars, cached as .far files in
``--cache-dir``) and ``wetextprocessing`` (``tn.english``, which ships its compiled grammars).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata as metadata
import io
import json
import logging
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _closure(name: str, seen: set[str]) -> set[str]:
    """The distribution and every distribution it requires (markers with extras are skipped)."""
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        return seen
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return seen
    seen.add(key)
    for requirement in dist.requires or []:
        if "extra ==" in requirement:
            continue
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        if match:
            _closure(match.group(0), seen)
    return seen


def installed_mb(name: str) -> float:
    """Megabytes on disk of ``name`` and everything it pulls in."""
    total = 0
    for dist_name in _closure(name, set()):
        for file in metadata.distribution(dist_name).files or []:
            with contextlib.suppress(OSError):
                total += Path(str(file.locate())).stat().st_size
    return total / 1e6


def licence(name: str) -> str:
    meta = metadata.metadata(name)
    found = meta.get("License-Expression") or meta.get("License") or ""
    classifiers = [c.rsplit("::", 1)[-1].strip() for c in meta.get_all("Classifier") or [] if "License" in c]
    return found or ", ".join(classifiers) or "not stated in its metadata"


def _nemo(cache_dir: str) -> Callable[[str], str]:
    from nemo_text_processing.text_normalization.normalize import Normalizer

    normalizer = Normalizer(input_case="cased", lang="en", cache_dir=cache_dir, overwrite_cache=False)
    return lambda text: normalizer.normalize(text, punct_post_process=True)


def _wetext(cache_dir: str) -> Callable[[str], str]:
    from tn.english.normalizer import Normalizer

    normalizer = Normalizer()
    return lambda text: normalizer.normalize(text)


CANDIDATES: dict[str, tuple[str, Callable[[str], Callable[[str], str]]]] = {
    "nemo-text-processing": ("nemo-text-processing", _nemo),
    "wetextprocessing": ("wetextprocessing", _wetext),
}


def run_cases(
    normalize: Callable[[str], str], cases: list[str], repeats: int
) -> tuple[list[str], list[float]]:
    """Every case's output (first run, untimed) and ``repeats`` timed runs of each, in milliseconds."""
    outputs, latencies = [], []
    for text in cases:
        outputs.append(normalize(text))
        for _ in range(repeats):
            began = time.perf_counter()
            normalize(text)
            latencies.append((time.perf_counter() - began) * 1000.0)
    return outputs, latencies


def evaluate(name: str, cases: list[str], repeats: int, cache_dir: str) -> dict[str, Any]:
    distribution, build = CANDIDATES[name]
    cached = any(Path(cache_dir).glob("*.far"))
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        normalize = build(cache_dir)
    startup_s = time.perf_counter() - started
    outputs, latencies = run_cases(normalize, cases, repeats)
    return {
        "name": name,
        "version": metadata.version(distribution),
        "licence": licence(distribution),
        "installed_mb": round(installed_mb(distribution), 1),
        "startup_s": round(startup_s, 2),
        "grammar_cache_was_warm": cached if name == "nemo-text-processing" else True,
        "outputs": outputs,
        "latencies_ms": latencies,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache-dir", default="/tmp/norm-eval-work/nemo-cache")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=sorted(CANDIDATES), action="append")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    cases = json.load(sys.stdin)
    results = []
    for name in args.only or sorted(CANDIDATES):
        try:
            results.append(evaluate(name, cases, args.repeats, args.cache_dir))
        except ImportError as exc:
            results.append({"name": name, "error": f"not importable here: {exc.name}"})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
