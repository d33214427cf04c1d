"""Make a Strands agent speak while it writes, through a Kokoro endpoint on Amazon SageMaker.

The same three lines as with a local server; only the endpoint string changes::

    speech = KokoroSpeech(endpoint="sagemaker:kokoro-82m?region=us-east-1")
    agent = Agent(model=model, hooks=[speech], callback_handler=None)
    async for event in speech.stream(agent, prompt): ...

Needs the ``sagemaker`` extra (SageMaker's bidirectional stream is in the HTTP/2 SDK, not in boto3) and
AWS credentials allowed to call ``sagemaker:InvokeEndpointWithBidirectionalStream`` on the endpoint
(``speech-infra deploy kokoro-82m`` creates one named ``kokoro-82m``):

    uv run --all-extras python examples/speak_through_sagemaker.py kokoro-82m --region us-east-1 \\
        "Tell me about otters." --model bedrock:<model-id>

Text is printed as it streams; the audio (24 kHz mono PCM) goes to a WAV file (``--out``). A turn that
failed, or spoke nothing, writes no file and exits with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import logging
import sys
import wave
from typing import Any

from strands import Agent
from strands.models.model import Model

from agentcore_app.agent.models import create_model, model_setting
from strands_kokoro import KokoroSpeech


async def speak(
    prompt: str, endpoint: str, model: str | Model | None, out: str, **session_options: Any
) -> int:
    """Speak one answer through ``endpoint``; 0 when its audio was written to ``out``, else 1.

    ``session_options`` go to the SageMaker session (e.g. a ``botocore_session`` of your own).
    """
    llm = model if isinstance(model, Model) else create_model(model_setting(model))
    speech = KokoroSpeech(endpoint=endpoint, **session_options)
    agent = Agent(model=llm, hooks=[speech], callback_handler=None)
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
                failed = failed or event["type"] == "error"
            case "agent_end" if event["first_audio_ms"] is not None:
                print(f"\n\nfirst audio {event['first_audio_ms']:,.0f} ms after the question")
    if failed or not audio:
        print(f"no audio: {out} not written", file=sys.stderr)
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
    parser.add_argument("endpoint_name", help="the SageMaker endpoint's name, e.g. kokoro-82m")
    parser.add_argument("prompt", nargs="?", default="Tell me three facts about sea otters.")
    parser.add_argument(
        "--region", default=None, help="the endpoint's AWS region (default: your AWS config's)"
    )
    parser.add_argument("--model", default=None, help="local | bedrock:<id> | openai:<url>#<model>")
    parser.add_argument("--out", default="answer.wav", help="WAV file for the spoken answer")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="\n%(levelname)s %(name)s: %(message)s")
    endpoint = f"sagemaker:{args.endpoint_name}" + (f"?region={args.region}" if args.region else "")
    sys.exit(asyncio.run(speak(args.prompt, endpoint, args.model, args.out)))
