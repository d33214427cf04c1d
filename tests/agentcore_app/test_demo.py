"""The demo as a client: both modes asked of a given agent app, then the table, WAVs, PNG and JSON.

``agent-infra demo --local`` (which starts that app here) is tested with the launchers, in tests/cdk.
"""

from __future__ import annotations

import json
import wave
from pathlib import Path

import pytest


def test_demo_against_an_endpoint_url_with_canned_sse_app(tmp_path: Path) -> None:
    """``--endpoint-url http://...``: no local stack is started; both modes are asked of that app, in
    alternating order round by round, and the medians are reported."""
    import argparse
    import asyncio
    import base64

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from agentcore_app.local import demo
    from agentcore_app.local.stack import serve_asgi
    from agentcore_app.local.turn_record import TurnRecord

    asked: list[str] = []

    async def invocations(request: Request) -> Response:
        mode = (await request.json())["mode"]
        asked.append(mode)
        audio = base64.b64encode(b"\x10\x00" * 2400).decode()
        events = [
            {"type": "agent_start", "request_id": "r", "mode": mode},
            {"type": "text_delta", "seq": 0, "text": "Hi."},
            {"type": "audio_chunk", "seq": 0, "sentence": 0, "audio": audio, "sample_rate": 24000},
            {"type": "agent_end", "request_id": "r", "mode": mode},
        ]
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
        return Response(body, media_type="text/event-stream")

    app = Starlette(routes=[Route("/invocations", invocations, methods=["POST"])])

    async def scenario() -> list[TurnRecord]:
        async with serve_asgi(app) as url:
            return await demo.collect(url, "hi", repeat=3)

    records = asyncio.run(scenario())
    assert asked == ["bidi", "batch", "batch", "bidi", "bidi", "batch"]  # neither mode always goes first
    args = argparse.Namespace(prompt="hi", out_dir=tmp_path, json=tmp_path / "n.json")
    results = demo.report(args, records, "http://x")
    assert results["modes"]["bidi"]["median"]["audio_s"] == pytest.approx(0.1)
    assert results["modes"]["bidi"]["median"]["runs"] == 3 and len(results["modes"]["batch"]["runs"]) == 3
    saved = json.loads((tmp_path / "n.json").read_text())
    assert saved["target"] == "http://x" and saved["times_from"] == "the moment the request was sent"
    assert saved["order"] == [["bidi", "batch"], ["batch", "bidi"], ["bidi", "batch"]]
    assert saved["llm"]["pace_tokens_per_s"] is None and saved["headline"].startswith("bidi")
    with wave.open(str(tmp_path / "demo-batch.wav")) as wav:
        assert wav.getnframes() == 2400
