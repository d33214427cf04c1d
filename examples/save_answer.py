"""Save a spoken answer to a file: ask the agent app once and write its audio as Ogg Opus (or MP3).

The agent app's ``POST /invocations`` streams server-sent events; with ``"format": "opus"`` the audio of
a turn's ``audio_chunk`` events, joined in order, is ONE Ogg Opus stream, so saving it is appending
bytes. An SSE event may arrive split across network chunks: read whole events (httpx-sse does), never
raw chunks::

    async with aconnect_sse(client, "POST", url, json={"prompt": p, "format": "opus"}) as events:
        async for sse in events.aiter_sse():
            event = sse.json()
            if event["type"] == "audio_chunk": file.write(base64.b64decode(event["audio"]))

Start the model server and the agent app (two terminals), then:

    uv run --extra demo python -m tts_container --port 8081
    uv run --extra demo python -m agentcore_app
    uv run --extra demo python examples/save_answer.py "Describe a lighthouse." --out answer.opus

Any player opens the file (``ffplay answer.opus``, a browser). Exit status 0 when audio was saved;
nothing is left behind otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import sys
from pathlib import Path

import httpx
from httpx_sse import aconnect_sse


async def save(url: str, prompt: str, out: Path, audio_format: str = "opus") -> int:
    """Ask ``url`` (the agent app) once and write the answer's audio to ``out``."""
    audio = bytearray()
    payload = {"prompt": prompt, "mode": "bidi", "format": audio_format}
    invocations = f"{url.rstrip('/')}/invocations"
    async with (
        httpx.AsyncClient(timeout=300) as client,
        aconnect_sse(client, "POST", invocations, json=payload) as events,
    ):
        async for sse in events.aiter_sse():
            event = sse.json()
            if event["type"] == "text_delta":
                print(event["text"], end="", flush=True)
            elif event["type"] == "audio_chunk":
                audio += base64.b64decode(event["audio"])
            elif event["type"] in ("error", "speech_error"):
                print(f"\n[{event['type']}: {event['code']}] {event['message']}", file=sys.stderr)
    if not audio:
        print(f"\nno audio: {out} not written", file=sys.stderr)
        return 1
    await asyncio.to_thread(out.write_bytes, bytes(audio))
    print(f"\n-> {out} ({len(audio):,} bytes of {audio_format})")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prompt", nargs="?", default="Tell me three facts about sea otters.")
    parser.add_argument("--url", default="http://127.0.0.1:8080", help="the agent app")
    parser.add_argument("--format", dest="audio_format", choices=("opus", "mp3"), default="opus")
    parser.add_argument("--out", type=Path, default=Path("answer.opus"), help="where the audio goes")
    args = parser.parse_args()
    sys.exit(asyncio.run(save(args.url, args.prompt, args.out, args.audio_format)))
