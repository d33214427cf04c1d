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
(24 kHz mono PCM) is written to a WAV file with the standard library's ``wave``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import wave

from strands import Agent

from agentcore_app.models import create_model, model_setting
from strands_kokoro import KokoroSpeech


async def main(prompt: str, endpoint: str, model: str, mode: str, out: str) -> None:
    speech = KokoroSpeech(endpoint=endpoint, mode=mode)  # type: ignore[arg-type]
    agent = Agent(model=create_model(model_setting(model)), hooks=[speech], callback_handler=None)
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(24_000)
        async for event in speech.stream(agent, prompt):
            match event["type"]:
                case "text_delta":
                    print(event["text"], end="", flush=True)
                case "audio_chunk":
                    wav.writeframes(base64.b64decode(event["audio"]))
                case "speech_error" | "error":
                    print(f"\n[{event['type']}: {event['code']}] {event['message']}")
                case "agent_end":
                    audio_s, total_s = event["audio_ms"] / 1000, event["total_ms"] / 1000
                    first_text, first_audio = event["first_text_ms"], event["first_audio_ms"]
                    print(f"\n\nfirst text {first_text} ms, first audio {first_audio} ms")
                    print(f"{audio_s:.1f} s of audio in {total_s:.1f} s -> {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prompt", nargs="?", default="Tell me three facts about sea otters.")
    parser.add_argument("--endpoint", default="ws://127.0.0.1:8080", help="ws://, http://, sagemaker:<name>")
    parser.add_argument("--model", default=None, help="local | bedrock:<id> | openai:<url>#<model>")
    parser.add_argument("--mode", choices=("bidi", "batch"), default="bidi")
    parser.add_argument("--out", default="answer.wav", help="WAV file for the spoken answer")
    args = parser.parse_args()
    asyncio.run(main(args.prompt, args.endpoint, args.model, args.mode, args.out))
