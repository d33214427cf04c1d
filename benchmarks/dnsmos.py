"""Whether the streamed audio sounds as good as Kokoro rendered whole: DNSMOS and Whisper's word error
rate, ours against the peer's.

Each of ``benchmarks.capacity``'s answers is spoken twice on the same int8 weights and voice: by the
model server, sentence by sentence over one WebSocket session (what a listener hears: windows, joins,
trimmed edges), and by kokoro-onnx's ``create()`` on the whole answer at once (what most CPU users of
Kokoro run). Both are scored by Microsoft's DNSMOS P.835 (``speechmos``: SIG, BAK, OVRL on a 1-5 scale)
at its 16 kHz, and heard by Whisper-base (:mod:`benchmarks.speech_check`): word edits over all the
answers' words. The server renders a request the same whatever its load, so this figure holds at every
number of listeners. The scorer needs librosa, kept out of the project's environment in its own group:

    uv run --all-extras --group quality python -m benchmarks.dnsmos
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import soxr

from agentcore_app.local.stack import model_server
from benchmarks.capacity import ANSWERS
from benchmarks.machine import MachineAt, results_path, save_results
from strands_kokoro import open_session
from strands_kokoro.protocol import DEFAULT_VOICE, AudioData, SynthesisCompleted, SynthesizeRequest

RESULTS = Path(__file__).parent / "results" / "dnsmos.json"
SCORER_RATE = 16_000
SCORES = ("ovrl_mos", "sig_mos", "bak_mos")

Samples = npt.NDArray[np.float32]


async def streamed(ws_url: str) -> list[Samples]:
    """Each answer as the server streams it: its sentences sent as requests on one session, the audio
    of all of them back to back (24 kHz)."""
    answers: list[Samples] = []
    async with open_session(ws_url) as session:
        events = session.events()
        for a, answer in enumerate(ANSWERS):
            pcm = bytearray()
            for s, sentence in enumerate(answer):
                await session.send(SynthesizeRequest(sentence, request_id=f"a{a}-s{s}"))
            done = 0
            async for event in events:
                if isinstance(event, AudioData):
                    pcm += event.pcm
                elif isinstance(event, SynthesisCompleted):
                    done += 1
                    if done == len(answer):
                        break
            answers.append((np.frombuffer(bytes(pcm), dtype=np.int16) / 32768).astype(np.float32))
        await session.close()
    return answers


def whole() -> list[Samples]:
    """Each answer from kokoro-onnx's ``create()`` on the whole text (24 kHz)."""
    from kokoro_onnx import Kokoro

    from tts_container.weights.provisioning import ensure_weights

    weights = ensure_weights()
    kokoro = Kokoro(str(weights.onnx_model), str(weights.voices))
    return [
        np.asarray(kokoro.create(" ".join(answer), voice=DEFAULT_VOICE)[0], dtype=np.float32)
        for answer in ANSWERS
    ]


def scores(audio: Samples, rate: int = 24_000) -> dict[str, float]:
    from speechmos import dnsmos

    result = dnsmos.run(soxr.resample(audio, rate, SCORER_RATE), sr=SCORER_RATE)
    return {name: round(float(result[name]), 3) for name in SCORES}


async def run() -> dict[str, Any]:
    async with model_server() as server:
        ours = await streamed(server.ws_url)
    peer = whole()
    rows: list[dict[str, dict[str, float]]] = [
        {"ours": scores(mine), "peer": scores(theirs)} for mine, theirs in zip(ours, peer, strict=True)
    ]
    mean = {
        side: {name: round(statistics.fmean(row[side][name] for row in rows), 3) for name in SCORES}
        for side in ("ours", "peer")
    }
    delta = {name: round(mean["ours"][name] - mean["peer"][name], 3) for name in SCORES}
    wer = {side: word_error_rate_of(audio) for side, audio in (("ours", ours), ("peer", peer))}
    return {"answers": rows, "mean": mean, "ours_minus_peer": delta, "whisper_wer": wer}


def word_error_rate_of(answers: list[Samples], rate: int = 24_000) -> float:
    """Whisper's word edits over every answer's words, against the answers' text."""
    from benchmarks.speech_check import edit_distance, transcribe, words
    from benchmarks.torch_converted import pcm16

    edits = spoken = 0
    for audio, answer in zip(answers, ANSWERS, strict=True):
        reference = words(" ".join(answer))
        edits += edit_distance(reference, words(transcribe(pcm16(audio), rate)))
        spoken += len(reference)
    return round(edits / spoken, 4)


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    out = results_path(RESULTS)
    started = MachineAt.now()
    result = asyncio.run(run())
    for side in ("ours", "peer"):
        print(f"{side:5s} " + "  ".join(f"{n} {v:.3f}" for n, v in result["mean"][side].items()))
    print("ours - peer " + "  ".join(f"{n} {v:+.3f}" for n, v in result["ours_minus_peer"].items()))
    print("Whisper WER " + "  ".join(f"{side} {wer:.4f}" for side, wer in result["whisper_wer"].items()))
    save_results(out, result, started)


if __name__ == "__main__":
    main()
