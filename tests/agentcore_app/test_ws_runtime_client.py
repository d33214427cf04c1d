"""The client side of a deployed runtime's WebSocket: SigV4 signing, against a local stand-in of AgentCore.

``agent-infra demo --endpoint-url <runtime-arn> --transport ws`` signs the upgrade with botocore; the
stand-in (:mod:`tests.agentcore_app.agentcore_ws_standin`) verifies the signature as AWS does and relays to
the REAL agent app's ``/ws``, which speaks through the real model server. The LLM is ``ScriptedModel``
(a test double). ``BEDROCK_AGENTCORE_DP_ENDPOINT`` points the client at the stand-in, as it points the
AgentCore SDK's own clients elsewhere.
"""

from __future__ import annotations

import contextlib
import datetime
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from botocore.credentials import ReadOnlyCredentials
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from agentcore_app import event_frames
from agentcore_app.app import create_app
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.local.client import run_turn
from agentcore_app.local.stack import serve_asgi
from agentcore_app.local.ws_client import (
    DP_ENDPOINT_ENV,
    local_ws_url,
    presigned_url,
    runtime_ws_url,
    signed_headers,
)
from tests.agentcore_app.agentcore_ws_standin import StandIn
from tests.scripted_model import ScriptedModel

if TYPE_CHECKING:
    from tests.model_server_process import RunningServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]

ARN = "arn:aws:bedrock-agentcore:us-west-2:123456789012:runtime/speaking_agent-AbCdEf1234"
KEY, SECRET, TOKEN = "AKIDSTANDIN0000000000", "standin-secret-key/0123456789abcdefghij", "standin-token"
SESSION = "runtime-session-0123456789abcdef0123456789"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (
        ("AWS_ACCESS_KEY_ID", KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_SESSION_TOKEN", TOKEN),
    ):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@contextlib.asynccontextmanager
async def gateway(speech: str, state: Path, **standin_options: bool) -> AsyncIterator[tuple[str, StandIn]]:
    """The real agent app behind the stand-in; yields the stand-in's http URL."""
    app = create_app(
        speech_endpoint=speech,
        model=lambda: ScriptedModel(answer="Signed and spoken."),
        conversations=ConversationSettings(location=state),
    )
    async with serve_asgi(app) as app_url:
        standin = StandIn(local_ws_url(app_url), ReadOnlyCredentials(KEY, SECRET, TOKEN), **standin_options)
        async with serve_asgi(standin.app()) as url:
            yield url, standin


def test_the_runtime_url_is_agentcores() -> None:
    assert runtime_ws_url(ARN) == (
        "wss://bedrock-agentcore.us-west-2.amazonaws.com/runtimes/"
        "arn%3Aaws%3Abedrock-agentcore%3Aus-west-2%3A123456789012%3Aruntime%2Fspeaking_agent-AbCdEf1234/ws"
    )
    with pytest.raises(ValueError, match="runtime ARN"):
        runtime_ws_url("arn:aws:s3:::bucket")


@pytest.mark.usefixtures("aws_env")
def test_the_date_sent_is_the_date_botocore_signed(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore stamps the request itself; a date taken by the client a moment before can be a second
    off (a 403 from the gateway). Here botocore's clock is far from the real one."""
    signing_time = datetime.datetime(2026, 1, 2, 3, 4, 5)
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: signing_time)
    _, headers = signed_headers(ARN, SESSION)
    assert headers["X-Amz-Date"] == "20260102T030405Z"
    assert "/20260102/us-west-2/bedrock-agentcore/aws4_request" in headers["Authorization"]
    assert headers["X-Amz-Security-Token"] == TOKEN


@pytest.mark.usefixtures("aws_env")
async def test_a_signed_turn_through_the_standin_with_binary_relayed_frames(
    model_server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with gateway(model_server.ws_url, tmp_path, binary_frames=True) as (url, standin):
        monkeypatch.setenv(DP_ENDPOINT_ENV, url)
        record = await run_turn(
            ARN, "Hello?", "bidi", transport="ws", audio_format="opus", session_id=SESSION
        )
    assert standin.seen == [{"arn": ARN, "signed": "header", "session": SESSION}]
    assert record.text == "Signed and spoken."
    assert record.audio_format == "opus" and record.encoded[:4] == b"OggS"
    end = record.first("agent_end")
    assert end is not None and record.audio_s * 1000 == pytest.approx(end.event["audio_ms"], abs=1.0)
    assert 0 < record.wire_bytes < len(record.pcm) / 4  # compressed, in binary frames


@pytest.mark.usefixtures("aws_env")
async def test_a_presigned_url_opens_the_socket_and_a_wrong_key_is_refused(
    model_server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with gateway(model_server.ws_url, tmp_path) as (url, standin):
        monkeypatch.setenv(DP_ENDPOINT_ENV, url)
        async with connect(presigned_url(ARN, SESSION)) as ws:  # what a browser would be handed
            await ws.send(event_frames.turn_request({"prompt": "Hi"}, "p"))
            reader, kinds = event_frames.FrameReader(), []
            while (read := reader.feed(await ws.recv())) is None or read.event["type"] != "turn_end":
                kinds.append(None if read is None else read.event["type"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        with pytest.raises(InvalidStatus) as refused:
            await run_turn(ARN, "Hello?", "bidi", transport="ws")
    assert refused.value.response.status_code == 403
    assert [s["signed"] for s in standin.seen] == ["presigned", None]
    assert standin.seen[0]["session"] == SESSION
    assert "agent_end" in kinds and "audio_chunk" in kinds
    assert read.event["status"] == "completed"


@pytest.mark.usefixtures("aws_env")
async def test_agent_infra_demo_over_a_signed_websocket(
    model_server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line a user runs against a deployed runtime, against the stand-in."""
    import asyncio

    from cdk.cli import agent_main

    argv = ["demo", "--endpoint-url", ARN, "--transport", "ws", "--format", "opus", "--mode", "bidi"]
    argv += ["--out-dir", str(tmp_path / "out"), "--json", str(tmp_path / "demo.json")]
    async with gateway(model_server.ws_url, tmp_path / "state") as (url, standin):
        monkeypatch.setenv(DP_ENDPOINT_ENV, url)
        status = await asyncio.to_thread(agent_main, argv)
    assert status == 0
    assert [s["signed"] for s in standin.seen] == ["header"]
    result = json.loads((tmp_path / "demo.json").read_text())
    (turn,) = result["modes"]["bidi"]["runs"]
    assert turn["text"] == "Signed and spoken." and turn["audio_s"] > 0.5
    assert (tmp_path / "out" / "demo-bidi.wav").stat().st_size > 24_000
