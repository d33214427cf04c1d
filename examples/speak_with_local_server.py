"""Make a Strands agent speak while it writes, with a Kokoro server on this machine.

The three lines that matter::

    speech = KokoroSpeech(endpoint="ws://127.0.0.1:8080")
    agent = Agent(model=model, hooks=[speech], callback_handler=None)
    async for event in speech.stream(agent, prompt): ...

Start the model server first (another terminal; it answers on port 8080 once the model is loaded):

    uv run --all-extras python -m tts_container

Then:

    uv run --all-extras python examples/speak_with_local_server.py "Tell me about otters." --out answer.wav

The model defaults to the offline SmolLM2 (``--model local``); ``--model bedrock:<model-id>`` or
``--model openai:<base-url>#<model>`` use a real provider. Text is printed as it streams; the audio
(24 kHz mono PCM) is written to a WAV file (default ``answer.wav`` here) with the standard library's
``wave``, once the turn has produced some: a turn that failed, or spoke nothing, leaves no file behind
and exits with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import logging
import sys
import wave

from strands import Agent

from agentcore_app.agent.models import create_model, model_setting
from strands_kokoro import KokoroSpeech


def _ms(value: float | None, missing: str) -> str:
    return missing if value is None else f"{value:,.0f} ms"


async def main(prompt: str, endpoint: str, model: str, mode: str, out: str) -> int:
    """Speak one answer; 0 when it was written to ``out``, 1 when the turn failed or produced no audio."""
    speech = KokoroSpeech(endpoint=endpoint, mode=mode)  # type: ignore[arg-type]
    agent = Agent(model=create_model(model_setting(model)), hooks=[speech], callback_handler=None)
    audio = bytearray()
    failed = False
    async for event in speech.stream(agent, prompt):
        match event["type"]:
            case "text_delta":
                print(event["text"], end="", flush=True)
            case "audio_chunk":
                audio += base64.b64decode(event["audio"])
            case "speech_error" | "error":
                print(f"\n[{event['type']}: {event['code']}] {event['message']}", file=sys.stderr)
                failed = failed or event["type"] == "error"  # a speech_error still lets the text go on
            case "agent_end":
                first_text = _ms(event["first_text_ms"], "no text")
                first_audio = _ms(event["first_audio_ms"], "no audio")
                print(f"\n\nfirst text: {first_text}, first audio: {first_audio}")
                print(f"{event['audio_ms'] / 1000:.1f} s of audio in {event['total_ms'] / 1000:.1f} s")
    if failed or not audio:
        why = "failed" if failed else "produced no audio"
        print(f"the turn {why}: {out} not written", file=sys.stderr)
        return 1
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(24_000)
        wav.writeframes(bytes(audio))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prompt", nargs="?", default="Tell me three facts about sea otters.")
    parser.add_argument("--endpoint", default="ws://127.0.0.1:8080", help="ws://, http://, sagemaker:<name>")
    parser.add_argument("--model", default=None, help="local | bedrock:<id> | openai:<url>#<model>")
    parser.add_argument("--mode", choices=("bidi", "batch"), default="bidi")
    parser.add_argument("--out", default="answer.wav", help="WAV file for the spoken answer")
    args = parser.parse_args()
    # A log line on a line of its own: Python's fallback handler wrote a warning (why speech gave up)
    # into the middle of the streamed text.
    logging.basicConfig(level=logging.WARNING, format="\n%(levelname)s %(name)s: %(message)s")
    sys.exit(asyncio.run(main(args.prompt, args.endpoint, args.model, args.mode, args.out)))
