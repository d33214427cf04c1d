"""``agent-infra demo --local`` as a newcomer runs it: real weights, model server, agent app and LLM."""

from __future__ import annotations

import json
import subprocess
import sys
import wave
from pathlib import Path

import pytest

AGENT_INFRA = str(Path(sys.executable).parent / "agent-infra")


@pytest.mark.slow
@pytest.mark.timeout(900)  # starts its own model server and runs two real turns: minutes on a busy CPU
def test_demo_local_writes_wavs_png_and_json(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    json_path = tmp_path / "numbers.json"
    result = subprocess.run(
        [
            AGENT_INFRA,
            "demo",
            "--local",
            "--prompt",
            "Say hello in one short sentence.",
            "--out-dir",
            str(out_dir),
            "--json",
            str(json_path),
        ],
        capture_output=True,
        text=True,
        timeout=880,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "time to first audio" in result.stdout
    assert "bidi first audio is" in result.stdout and "× sooner than batch" in result.stdout

    numbers = json.loads(json_path.read_text())
    assert set(numbers["modes"]) == {"bidi", "batch"}
    for mode, summary in numbers["modes"].items():
        assert summary["first_audio_ms"] is not None and summary["first_audio_ms"] > 0, mode
        assert summary["first_text_ms"] <= summary["total_ms"]
        assert summary["chunks"] >= 1 and summary["errors"] == []
        with wave.open(str(out_dir / f"demo-{mode}.wav")) as wav:
            assert wav.getnchannels() == 1 and wav.getsampwidth() == 2 and wav.getframerate() == 24_000
            assert wav.getnframes() / wav.getframerate() == pytest.approx(summary["audio_s"], abs=0.01)
    assert numbers["bidi_first_audio_speedup"] > 0
    png = out_dir / "demo-timeline.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_demo_against_an_endpoint_url_with_canned_sse_app(tmp_path: Path) -> None:
    """``--endpoint-url http://...``: no local stack is started; both modes are asked of that app."""
    import argparse
    import asyncio
    import base64

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from agentcore_app import demo
    from agentcore_app.local_stack import serve_asgi

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

    async def scenario() -> list[object]:
        async with serve_asgi(app) as url:
            args = argparse.Namespace(
                endpoint_url=url,
                local=False,
                prompt="hi",
                model="local",
                voice=None,
                out_dir=tmp_path,
                json=None,
            )
            return list(await demo.collect(args))

    records = asyncio.run(scenario())
    assert asked == ["bidi", "batch"]
    args = argparse.Namespace(
        endpoint_url="http://x", prompt="hi", model="local", out_dir=tmp_path, json=tmp_path / "n.json"
    )
    results = demo.report(args, records)  # type: ignore[arg-type]
    assert results["modes"]["bidi"]["audio_s"] == pytest.approx(0.1)
    assert json.loads((tmp_path / "n.json").read_text())["target"] == "http://x"
    with wave.open(str(tmp_path / "demo-batch.wav")) as wav:
        assert wav.getnframes() == 2400
