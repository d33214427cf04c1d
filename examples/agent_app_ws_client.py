"""A minimal client of the agent app's WebSocket ``/ws``: one question, the answer's text and audio.

The agent app (``python -m agentcore_app``, ``agent-infra serve``, or a deployed AgentCore runtime)
speaks over ``/ws`` with JSON text frames, and an ``audio_chunk`` frame is followed by ONE binary frame
holding its audio. This is all a client needs::

    await ws.send(json.dumps({"type": "turn", "prompt": prompt, "mode": "bidi"}))
    async for frame in ws:
        if isinstance(frame, bytes): audio += frame             # the chunk announced just before
        elif (event := json.loads(frame))["type"] == "turn_end": break

Start the model server and the agent app (two terminals), then ask:

    uv run --extra demo python -m tts_container --port 8081
    uv run --extra demo python -m agentcore_app
    uv run --extra demo python examples/agent_app_ws_client.py "Why is the sky blue?"

Only ``websockets`` and the standard library are used. The audio is raw 24 kHz PCM (``"format": "pcm"``);
with ``--out`` it is written as a WAV file. Exit status 0 when the turn completed with audio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import wave

from websockets.asyncio.client import connect


async def ask(url: str, prompt: str, mode: str = "bidi", out: str | None = None) -> int:
    """One turn over ``url`` (``ws://host:port/ws``); prints the text as it streams."""
    audio = bytearray()
    sample_rate = 24_000
    status = "failed"
    async with connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "turn", "prompt": prompt, "mode": mode}))
        async for frame in ws:
            if isinstance(frame, bytes):  # the audio of the audio_chunk event just before it
                audio += frame
                continue
            event = json.loads(frame)
            match event["type"]:
                case "text_delta":
                    print(event["text"], end="", flush=True)
                case "audio_chunk":
                    sample_rate = event["sample_rate"]
                case "error" | "speech_error":
                    print(f"\n[{event['type']}: {event['code']}] {event['message']}", file=sys.stderr)
                case "turn_end":
                    status = event["status"]
                    break
    print(f"\n{status}: {len(audio) / 2 / sample_rate:.1f} s of audio")
    if out and audio:
        with wave.open(out, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(sample_rate)
            wav.writeframes(bytes(audio))
        print(f"-> {out}")
    return 0 if status == "completed" and audio else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prompt", nargs="?", default="Tell me three facts about sea otters.")
    parser.add_argument("--url", default="ws://127.0.0.1:8080/ws", help="the agent app's /ws")
    parser.add_argument("--mode", choices=("bidi", "batch"), default="bidi")
    parser.add_argument("--out", default=None, help="also write the audio to this WAV file")
    args = parser.parse_args()
    sys.exit(asyncio.run(ask(args.url, args.prompt, args.mode, args.out)))
