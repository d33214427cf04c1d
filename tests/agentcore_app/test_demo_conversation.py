"""``agent-infra demo --turns ... [--session ID] [--mode M]``: a short conversation, as a client runs it.

A canned SSE app stands in for the agent app here (what the app does with the session id is tested in
``test_conversations``); it records the session header of every request.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import wave
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentcore_app.local import demo
from agentcore_app.local.stack import serve_asgi
from agentcore_app.runtime_session import SESSION_HEADER


def canned_app(asked: list[tuple[str, str | None, str]]) -> Starlette:
    """Answers every turn with one sentence and 0.1 s of audio; records (mode, session id, prompt)."""

    async def invocations(request: Request) -> Response:
        body = await request.json()
        asked.append((body["mode"], request.headers.get(SESSION_HEADER), body["prompt"]))
        audio = base64.b64encode(b"\x10\x00" * 2400).decode()
        events = [
            {"type": "agent_start", "request_id": "r", "mode": body["mode"]},
            {"type": "text_delta", "seq": 0, "text": f"Answer {len(asked)}."},
            {"type": "audio_chunk", "seq": 0, "sentence": 0, "audio": audio, "sample_rate": 24000},
            {"type": "agent_end", "request_id": "r", "mode": body["mode"]},
        ]
        return Response("".join(f"data: {json.dumps(e)}\n\n" for e in events), media_type="text/event-stream")

    return Starlette(routes=[Route("/invocations", invocations, methods=["POST"])])


def parse(argv: list[str], out_dir: Path) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    return parser.parse_args([*argv, "--out-dir", str(out_dir)])


def run_demo(argv: list[str], tmp_path: Path) -> tuple[int, list[tuple[str, str | None, str]]]:
    asked: list[tuple[str, str | None, str]] = []
    args = parse(argv, tmp_path)

    async def serve_and_run() -> int:
        async with serve_asgi(canned_app(asked)) as url:
            return await asyncio.to_thread(demo.run, args, url, url)

    return asyncio.run(serve_and_run()), asked


def test_turns_run_one_conversation_per_mode_in_order(tmp_path: Path) -> None:
    code, asked = run_demo(["--turns", "q1", "q2", "--json", str(tmp_path / "n.json")], tmp_path)
    assert code == 0
    assert [(mode, prompt) for mode, _, prompt in asked] == [
        ("bidi", "q1"),
        ("bidi", "q2"),
        ("batch", "q1"),
        ("batch", "q2"),
    ]
    bidi_ids = {sid for mode, sid, _ in asked if mode == "bidi"}
    batch_ids = {sid for mode, sid, _ in asked if mode == "batch"}
    assert len(bidi_ids) == len(batch_ids) == 1 and bidi_ids != batch_ids  # one conversation each
    assert all(sid is not None and len(sid) >= 33 for sid in bidi_ids | batch_ids)
    numbers = json.loads((tmp_path / "n.json").read_text())
    assert numbers["prompts"] == ["q1", "q2"]
    assert (numbers["transport"], numbers["format"]) == ("sse", "pcm")  # what the numbers were delivered by
    assert [t["text"] for t in numbers["conversations"]["bidi"]["turns"]] == ["Answer 1.", "Answer 2."]
    assert numbers["conversations"]["batch"]["session_id"] in batch_ids
    assert len(numbers["bidi_first_audio_speedup_per_turn"]) == 2
    with wave.open(str(tmp_path / "demo-bidi.wav")) as wav:
        assert wav.getnframes() == 2 * 2400  # both turns' audio, in order


def test_a_named_session_is_one_conversation_in_one_mode(tmp_path: Path) -> None:
    session = "my-conversation-0123456789abcdef0123456789"
    code, asked = run_demo(["--session", session, "--turns", "a", "b"], tmp_path)
    assert code == 0
    assert asked == [("bidi", session, "a"), ("bidi", session, "b")]
    code, asked = run_demo(["--session", session, "--mode", "batch"], tmp_path)
    assert code == 0 and asked == [("batch", session, demo.DEFAULT_PROMPT)]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--session", "my-conversation-0123456789abcdef0123456789", "--mode", "both"], "one mode"),
        (["--session", "short"], "33-128"),
    ],
)
def test_conflicting_options_stop_before_anything_is_asked(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, asked = run_demo(argv, tmp_path)
    assert code == 2 and asked == []
    assert says in capsys.readouterr().err


def test_the_classic_demo_sends_no_session(tmp_path: Path) -> None:
    code, asked = run_demo(["--prompt", "hi"], tmp_path)
    assert code == 0 and asked == [("bidi", None, "hi"), ("batch", None, "hi")]


def test_the_classic_demo_prints_each_modes_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The canned app numbers its answers, so the two modes' answers differ: both are shown, labelled."""
    code, _ = run_demo(["--prompt", "hi"], tmp_path)
    out = capsys.readouterr().out
    assert code == 0
    assert "bidi answer: Answer 1." in out and "batch answer: Answer 2." in out
    assert "\nanswer: " not in out


def test_one_mode_prints_no_comparison_with_the_mode_that_did_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, asked = run_demo(["--prompt", "hi", "--mode", "bidi"], tmp_path)
    out = capsys.readouterr().out
    assert code == 0 and [mode for mode, _, _ in asked] == ["bidi"]
    assert "bidi answer: Answer 1." in out
    assert "batch" not in out and "no ratio" not in out


def test_prompt_and_turns_exclude_each_other(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        parse(["--prompt", "x", "--turns", "a"], tmp_path)


def test_the_runtime_arn_path_uses_the_conversation_id() -> None:
    """Against a deployed runtime the session id is AgentCore's runtimeSessionId (boto3 Stubber)."""
    import boto3
    from botocore.response import StreamingBody
    from botocore.stub import Stubber

    from agentcore_app.local.client import run_turn

    body = b'data: {"type": "agent_start", "request_id": "r", "mode": "bidi"}\n\n'
    client = boto3.client(
        "bedrock-agentcore", region_name="us-west-2", aws_access_key_id="AKIDTEST", aws_secret_access_key="x"
    )
    arn = "arn:aws:bedrock-agentcore:us-west-2:123456789012:runtime/voice_agent-abc123"
    session = "my-conversation-0123456789abcdef0123456789"
    with Stubber(client) as stubber:
        expected: dict[str, Any] = {
            "agentRuntimeArn": arn,
            "runtimeSessionId": session,
            "payload": json.dumps({"prompt": "hi", "mode": "bidi"}).encode(),
            "contentType": "application/json",
            "accept": "text/event-stream",
        }
        stubber.add_response(
            "invoke_agent_runtime",
            {
                "response": StreamingBody(io.BytesIO(body), len(body)),
                "contentType": "text/event-stream",
                "statusCode": 200,
            },
            expected,
        )
        record = asyncio.run(run_turn(arn, "hi", "bidi", agentcore_client=client, session_id=session))
        stubber.assert_no_pending_responses()
    assert record.first("agent_start") is not None
