"""Transport: what reaching the listener costs, over SSE or the WebSocket, in PCM or compressed audio.

The same turns (a real Strands ``Agent`` on ``ScriptedModel`` at ``--tokens-per-s``, the real agent app
and model server) go out every way, in a rotated order per answer: SSE + base64 and WebSocket + binary,
each in PCM, Opus and MP3. Per way: bytes on the wire per audio second (and the longest answer under
AgentCore's 100 MB cap), first audio and its difference from PCM, the encoder's own share of first audio
(a fresh encoder on each turn's first PCM chunk: time to first bytes, audio held back, codec delay), and
Whisper WER of the decoded audio. The load is recorded at the start, before each turn (each waits for
it to settle) and at the end (architecture §7).

Usage: ``uv run --all-extras python -m benchmarks.transport`` (prints a table, writes
benchmarks/results/transport.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agentcore_app.local.client import run_turn
from agentcore_app.local.stack import agent_app, model_server, provision_weights
from agentcore_app.local.turn_record import TurnRecord
from benchmarks.machine import results_path
from benchmarks.speech_check import transcribe, word_error_rate
from strands_kokoro.audio_encoding import decode_audio, new_encoder
from strands_kokoro.protocol import AudioFormatName, audio_ms
from strands_kokoro.text.speech_text import clean_for_speech
from tests.scripted_model import FOUR_SENTENCES, ScriptedModel

RESULTS = Path(__file__).resolve().parent / "results" / "transport.json"
ANSWERS = (
    FOUR_SENTENCES,
    "Cats purr when they are content, and also when they are hurt. The sound comes from the muscles "
    "of the larynx. Some scientists think the vibration helps their bones heal.",
    "The Moon moves about four centimetres away from the Earth every year. Tides slowly steal the "
    "Earth's spin and hand it to the Moon. A day on Earth was once only six hours long.",
    "Honey never spoils if it is kept sealed. Jars of it were found in ancient Egyptian tombs. "
    "Its sugar leaves no water for bacteria to live on.",
)
WAYS: tuple[tuple[str, AudioFormatName], ...] = (
    ("sse", "pcm"),
    ("sse", "opus"),
    ("sse", "mp3"),
    ("ws", "pcm"),
    ("ws", "opus"),
    ("ws", "mp3"),
)
RESPONSE_CAP_BYTES = 100 * 1000 * 1000  # AgentCore's cap on one response
QUIET_LOAD = 1.0
QUIET_WAIT_S = 120
CODEC_DELAY_MS = {"pcm": 0.0, "opus": 0.0, "mp3": 1105 / 24_000 * 1000}  # heard as silence (untrimmed)


def _load() -> float:
    return round(os.getloadavg()[0], 2)


async def quiet_machine() -> float:
    """Wait (bounded) until the 1-minute load is back under ``QUIET_LOAD``; return it."""
    for _ in range(QUIET_WAIT_S):  # the load average is polled: nothing announces that it fell
        if (load := _load()) <= QUIET_LOAD:
            return load
        await asyncio.sleep(1.0)
    return _load()


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def first_pcm_chunk(record: TurnRecord) -> bytes:
    """The first audio chunk of a PCM turn, as the client received it."""
    return bytes(record.pcm[: record.chunk_bytes[0]]) if record.chunk_bytes else b""


def encoder_first_audio(pcm: bytes, fmt: AudioFormatName, sample_rate: int = 24_000) -> dict[str, float]:
    """A fresh encoder fed a turn's first PCM chunk: how long until bytes, how much audio it held back."""
    encoder = new_encoder(fmt, sample_rate)
    started = time.perf_counter()
    out = encoder.encode(pcm)
    encode_ms = (time.perf_counter() - started) * 1000
    heard_ms = audio_ms(len(decode_audio(out, fmt, sample_rate)), sample_rate) if out else 0.0
    held_ms = max(0.0, audio_ms(len(pcm), sample_rate) - heard_ms + CODEC_DELAY_MS[fmt])
    return {
        "first_chunk_ms": round(audio_ms(len(pcm), sample_rate), 1),
        "encode_ms": round(encode_ms, 2),
        "first_bytes": len(out),
        "held_back_ms": round(held_ms, 1),
        "codec_delay_ms": round(CODEC_DELAY_MS[fmt], 1),
        # What the encoder adds before the listener hears the first sound of the chunk.
        "added_first_audio_ms": round(encode_ms + CODEC_DELAY_MS[fmt] + (0.0 if out else heard_ms), 1),
    }


def summary_of(record: TurnRecord) -> dict[str, Any]:
    first = record.first("audio_chunk")
    end = record.first("agent_end")
    audio_s = record.audio_s
    text = clean_for_speech(record.text)
    return {
        "first_audio_ms": None if first is None else round(first.at_ms, 1),
        "audio_s": round(audio_s, 3),
        "agent_audio_ms": None if end is None else end.event["audio_ms"],
        "wire_bytes": record.wire_bytes,
        "audio_bytes": sum(record.chunk_bytes),
        "bytes_per_audio_s": round(record.wire_bytes / audio_s) if audio_s else None,
        "chunks": len(record.chunk_bytes),
        "text": text,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    load_at_start = _load()
    await provision_weights()
    answer = [ANSWERS[0]]
    turns: list[dict[str, Any]] = []
    records: list[tuple[dict[str, Any], TurnRecord]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            model_server(Path(tmp) / "model_server.log") as server,
            agent_app(server.ws_url, lambda: ScriptedModel(answer[0], tokens_per_s=args.tokens_per_s)) as url,
        ):
            for warm in ("sse", "ws"):  # one untimed turn per transport: connections, caches
                await run_turn(url, "Warm up.", "bidi", transport=warm, audio_format="opus")
            for number, text in enumerate(ANSWERS[: args.answers]):
                answer[0] = text
                order = WAYS[number % len(WAYS) :] + WAYS[: number % len(WAYS)]
                for transport, fmt in order:
                    load = await quiet_machine()
                    record = await run_turn(
                        url, f"Question {number}.", "bidi", transport=transport, audio_format=fmt
                    )
                    row: dict[str, Any] = {"answer": number, "transport": transport, "format": fmt}
                    row["load"] = load
                    row |= summary_of(record)
                    turns.append(row)
                    records.append((row, record))
                    print(
                        f"answer {number} {transport:>3} {fmt:>4}: {row['bytes_per_audio_s']} B/s, "
                        f"first audio {row['first_audio_ms']} ms (load {load})"
                    )
    encoder = {}
    for fmt in ("opus", "mp3"):
        firsts = [
            encoder_first_audio(first_pcm_chunk(rec), fmt) for row, rec in records if row["format"] == "pcm"
        ]
        encoder[fmt] = {key: _median([f[key] for f in firsts]) for key in firsts[0]}
    if not args.no_whisper:
        for row, record in records:
            row["wer"] = round(
                word_error_rate(row["text"], transcribe(bytes(record.pcm), record.sample_rate)), 4
            )
    return {
        "benchmark": "transport",
        "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "load_at_start": load_at_start,
        "load_at_end": _load(),
        "loadavg_at_end": list(os.getloadavg()),
        "tokens_per_s": args.tokens_per_s,
        "ways": summarize(turns),
        "encoder_first_audio": encoder,
        "turns": turns,
    }


def summarize(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """Per way: medians over the answers, and the differences from PCM on the same transport, per turn."""
    out: dict[str, Any] = {}
    for transport, fmt in WAYS:
        mine = [t for t in turns if (t["transport"], t["format"]) == (transport, fmt)]
        pcm = {t["answer"]: t for t in turns if (t["transport"], t["format"]) == (transport, "pcm")}
        rate = sum(t["wire_bytes"] for t in mine) / max(1e-9, sum(t["audio_s"] for t in mine))
        later = [
            t["first_audio_ms"] - pcm[t["answer"]]["first_audio_ms"] for t in mine if t["first_audio_ms"]
        ]
        wer = [t["wer"] for t in mine if "wer" in t]
        wer_delta = [t["wer"] - pcm[t["answer"]]["wer"] for t in mine if "wer" in t]
        out[f"{transport}+{fmt}"] = {
            "bytes_per_audio_s": round(rate),
            "audio_bytes_per_audio_s": round(
                sum(t["audio_bytes"] for t in mine) / max(1e-9, sum(t["audio_s"] for t in mine))
            ),
            "hours_under_100MB": round(RESPONSE_CAP_BYTES / rate / 3600, 2),
            "first_audio_ms": _median([t["first_audio_ms"] for t in mine if t["first_audio_ms"]]),
            "first_audio_vs_pcm_ms": _median(later),
            "wer": None if not wer else round(statistics.mean(wer), 4),
            "wer_vs_pcm": None if not wer_delta else round(statistics.mean(wer_delta), 4),
            "max_load": max(t["load"] for t in mine),
        }
    return out


def print_table(result: dict[str, Any]) -> None:
    print(f"\nload at start {result['load_at_start']}, at end {result['load_at_end']}")
    print(f"{'way':>9} {'B/audio s':>10} {'h < 100MB':>9} {'first audio':>11} {'vs pcm':>7}", end="")
    print(f" {'WER':>6} {'vs pcm':>7}")
    for way, row in result["ways"].items():
        print(
            f"{way:>9} {row['bytes_per_audio_s']:>10} {row['hours_under_100MB']:>9} "
            f"{row['first_audio_ms']!s:>11} {row['first_audio_vs_pcm_ms']!s:>7} {row['wer']!s:>6} "
            f"{row['wer_vs_pcm']!s:>7}"
        )
    for fmt, row in result["encoder_first_audio"].items():
        print(f"encoder {fmt}: {row}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=len(ANSWERS), help="use the first N answers")
    parser.add_argument("--tokens-per-s", type=float, default=40.0, help="the scripted model's speed")
    parser.add_argument("--no-whisper", action="store_true", help="skip the Whisper round trip")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.out == RESULTS:  # the committed figures: only from a quiet machine
        args.out = results_path(RESULTS)
    result = asyncio.run(run(args))
    print_table(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
