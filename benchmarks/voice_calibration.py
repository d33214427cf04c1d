"""First audio of a voice other than the default, before and after the server fitted it in idle time.

Starts a model server on a weight cache of its own (weight files linked) that knows only ``af_heart``'s
statistics (:mod:`tts_container.engines.voice_calibration`), then over its WebSocket times ``af_heart``
and ``bf_emma`` before (``bf_emma`` rendered whole), the time the fit took, and ``bf_emma`` after.
Medians of ``--trials`` each; writes ``benchmarks/results/voice_calibration.json`` with the load::

    uv run --all-extras python -m benchmarks.voice_calibration
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

from agentcore_app.local.stack import start_model_server, stop_model_server
from benchmarks.machine import load_average, results_path
from strands_kokoro.protocol import (
    WS_PATH,
    ServerError,
    SynthesisCompleted,
    SynthesizeRequest,
    control_object,
    parse_control,
)
from tts_container.engines.ada_snake import NATIVE_DIR
from tts_container.engines.static_int8 import STATIC_DIR
from tts_container.weights.cache import CACHE_ENV, MANIFEST_FILE, default_cache_dir

RESULTS = Path(__file__).parent / "results" / "voice_calibration.json"
SENTENCE = (
    "The ferry left the harbour at dawn, carrying farmers, their goats and a crate of apples across the "
    "wide grey river to the market on the other side, where the stalls were already open and busy."
)


def cache_knowing_only_af_heart(root: Path) -> Path:
    """A weight cache of the real files (linked, not copied) whose statistics are af_heart's alone (the
    real cache must hold the weights and af_heart's fit: any model server started once has made them)."""
    real = default_cache_dir()
    derived = (STATIC_DIR, NATIVE_DIR)  # derived from the export alone, or built for this machine
    for name in (MANIFEST_FILE, "config.json", "kokoro-v1.0.int8.onnx", "voices.npz", *derived):
        if (real / name).exists():
            (root / name).symlink_to(real / name)
    for saved in (real / "norm-stats").rglob("af_heart.npz"):  # each vocoder variant's fit
        kept = root / saved.relative_to(real)
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(saved, kept)
    return root


async def first_audio_ms(url: str, voice: str) -> float:
    """One request over a fresh session: ms from sending it to its first audio frame."""
    async with connect(url, max_size=None) as ws:
        started = time.perf_counter()
        await ws.send(SynthesizeRequest(SENTENCE, voice=voice).to_wire())
        first: float | None = None
        while True:
            obj = control_object(await ws.recv())
            if obj is None:  # audio
                first = first if first is not None else (time.perf_counter() - started) * 1000
                continue
            frame = parse_control(obj)
            if isinstance(frame, ServerError):
                raise RuntimeError(f"server error: {frame}")
            if isinstance(frame, SynthesisCompleted):
                break
    if first is None:
        raise RuntimeError("no audio")
    return first


async def measure(http_url: str, ws_url: str, trials: int) -> dict[str, Any]:
    async def median(voice: str) -> float:
        return statistics.median([await first_audio_ms(ws_url, voice) for _ in range(trials)])

    before = {"af_heart": await median("af_heart"), "bf_emma": await median("bf_emma")}
    asked = time.perf_counter()
    async with httpx.AsyncClient() as client:
        while True:  # the fit runs in the server's idle time: nothing else is sent meanwhile
            if "bf_emma" in (await client.get(f"{http_url}/stats")).json()["voices_calibrated"]:
                break
            await asyncio.sleep(0.5)
    fitted_s = time.perf_counter() - asked
    after = {"bf_emma": await median("bf_emma"), "af_heart": await median("af_heart")}
    return {"before_ms": before, "calibration_wall_s": round(fitted_s, 1), "after_ms": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.out == RESULTS:  # the committed figures: only from a quiet machine
        args.out = results_path(RESULTS)
    load_before = load_average()
    with tempfile.TemporaryDirectory() as cache:
        os.environ[CACHE_ENV] = str(cache_knowing_only_af_heart(Path(cache)))
        server = start_model_server(ready_timeout_s=600)
        try:
            result = asyncio.run(measure(server.http_url, f"{server.ws_url}{WS_PATH}", args.trials))
        finally:
            stop_model_server(server)
    document = {
        "sentence_chars": len(SENTENCE),
        "trials": args.trials,
        **{k: {v: round(ms) for v, ms in d.items()} if isinstance(d, dict) else d for k, d in result.items()},
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }
    print(json.dumps(document, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
