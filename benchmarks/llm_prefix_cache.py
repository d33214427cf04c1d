"""The embedded LLM's first token when the system prompt is already read, against reading the whole prompt.

The demo's model (``LocalSmolLM2Model(cached_prefix="system")``) starts every request with the app's
system prompt in llama.cpp's cache and reads the user's part fresh; the other reads its whole prompt
(``cache_prompt=False``). Both get the prompt a turn sends (the ``<now>`` line, then the question), in
this process at the app's LLM priority, alternating which goes first; the time runs from the stream's
start to its first text delta, and llama.cpp's own counts say how many tokens each read. Prints medians
and writes ``benchmarks/results/llm_prefix_cache.json`` with the load average::

    uv run --all-extras python -m benchmarks.llm_prefix_cache
    uv run --all-extras python -m benchmarks.llm_prefix_cache --prompt "Why is the sky blue?" --trials 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from agentcore_app.agent.local_llm import LocalSmolLM2Model
from agentcore_app.agent.time_context import now_line
from agentcore_app.app import SYSTEM_PROMPT
from benchmarks.machine import load_average, results_path

RESULTS = Path(__file__).parent / "results" / "llm_prefix_cache.json"
PROMPT = "In five sentences, explain how a glacier carves a valley over thousands of years."
MODELS = {
    "system_prompt_cached": lambda: LocalSmolLM2Model(cached_prefix="system", max_tokens=2),
    "whole_prompt_read": lambda: LocalSmolLM2Model(cache_prompt=False, max_tokens=2),
}


async def first_token(model: LocalSmolLM2Model, prompt: str) -> dict[str, Any]:
    """One request: ms to the first text delta, and the usage llama.cpp reports for it."""
    started = time.perf_counter()
    first_ms: float | None = None
    usage: dict[str, Any] = {}
    asked = [{"role": "user", "content": [{"text": f"{now_line()}\n{prompt}"}]}]
    async for event in model.stream(asked, system_prompt=SYSTEM_PROMPT):  # type: ignore[arg-type]
        if "contentBlockDelta" in event and first_ms is None:
            first_ms = (time.perf_counter() - started) * 1000
        if "metadata" in event:
            usage = dict(event["metadata"]["usage"])
    return {"first_token_ms": round(first_ms or 0.0, 1), **usage}


async def measure(prompt: str, trials: int) -> dict[str, list[dict[str, Any]]]:
    await LocalSmolLM2Model().load()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in MODELS}
    for trial in range(trials):
        order = list(MODELS) if trial % 2 == 0 else list(reversed(MODELS))
        for name in order:
            runs[name].append(await first_token(MODELS[name](), prompt))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    path = results_path(RESULTS)
    load_before = load_average()
    runs = asyncio.run(measure(args.prompt, args.trials))
    medians = {name: statistics.median(r["first_token_ms"] for r in rows) for name, rows in runs.items()}
    for name, rows in runs.items():
        last = rows[-1]
        print(
            f"{name:22} first token {medians[name]:7,.0f} ms (median of {len(rows)}), "
            f"prompt {last.get('inputTokens')} tokens, {last.get('cacheReadInputTokens')} found read"
        )
    ratio = medians["whole_prompt_read"] / medians["system_prompt_cached"]
    print(f"the system prompt cached: first token {ratio:.2f}x sooner (load {load_before} before)")
    result = {
        "prompt": args.prompt,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "median_first_token_ms": medians,
        "speedup": round(ratio, 2),
        "runs": runs,
        "at": time.time(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
