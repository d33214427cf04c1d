"""Word error rate of the cascade's speech-to-text on held-out utterances (goal: WER <= 0.15).

Twelve sentences that no test uses are spoken by the model server in three voices other than the
agent's (``af_heart``), resampled to 16 kHz, given white noise 20 dB below their level, framed as the
cascade frames an utterance (300 ms of room tone before, as its pre-roll; 500 ms after, its end-of-turn
silence), and transcribed by :class:`~strands_kokoro.listening.speech_to_text.WhisperTranscriber`'s
``transcribe``, the call the cascade makes. WER: word edits over reference words (lower case, no
punctuation), per voice and over all utterances.

    uv run --all-extras python -m benchmarks.listening_wer
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from agentcore_app.local.stack import model_server
from benchmarks.machine import MachineAt, save_results
from benchmarks.speech_check import edit_distance, words
from strands_kokoro.listening.speech_to_text import WhisperTranscriber
from tests.listening.spoken_user import render_user_speech, room_tone, with_noise

RESULTS = Path(__file__).parent / "results" / "listening_wer.json"
VOICES = ("am_adam", "bf_emma", "af_nicole")
HELD_OUT = (
    "Can you move my dentist appointment to next Thursday afternoon?",
    "How long does it take to boil an egg?",
    "Turn off the lights in the kitchen, please.",
    "What did the weather look like in Seattle yesterday?",
    "Remind me to call my sister at seven tonight.",
    "Which train leaves earliest for Boston tomorrow morning?",
    "I would like two tickets for the evening show.",
    "Read me the last message from my manager.",
    "How many grams of sugar are in a teaspoon?",
    "Play some quiet piano music while I work.",
    "Is the pharmacy on Main Street still open?",
    "Add milk, bread and three lemons to my shopping list.",
)
SNR_DB = 20.0


async def measure(voices: tuple[str, ...]) -> dict[str, Any]:
    transcriber = WhisperTranscriber()
    await transcriber.load()
    rows: list[dict[str, Any]] = []
    async with model_server() as server:
        for voice in voices:
            for index, sentence in enumerate(HELD_OUT):
                clean = await render_user_speech(server.ws_url, sentence, voice=voice)
                noisy = with_noise(clean, snr_db=SNR_DB, seed=index)
                heard = await transcriber.transcribe(room_tone(0.3) + noisy + room_tone(0.5, seed=index))
                reference = words(sentence)
                rows.append(
                    {
                        "voice": voice,
                        "reference": sentence,
                        "heard": heard,
                        "edits": edit_distance(reference, words(heard)),
                        "words": len(reference),
                    }
                )
    per_voice = {voice: wer([r for r in rows if r["voice"] == voice]) for voice in voices}
    return {"snr_db": SNR_DB, "utterances": rows, "wer_per_voice": per_voice, "wer": wer(rows)}


def wer(rows: list[dict[str, Any]]) -> float:
    return round(sum(r["edits"] for r in rows) / max(1, sum(r["words"] for r in rows)), 4)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", nargs="+", default=list(VOICES))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = MachineAt.now()
    result = asyncio.run(measure(tuple(args.voices)))
    save_results(args.out, result, started)
    for row in result["utterances"]:
        if row["edits"]:
            print(f"{row['voice']:10} {row['edits']}/{row['words']} {row['reference']!r} -> {row['heard']!r}")
    print(json.dumps({k: result[k] for k in ("wer_per_voice", "wer", "load_before", "neighbours_load")}))


if __name__ == "__main__":
    main()
