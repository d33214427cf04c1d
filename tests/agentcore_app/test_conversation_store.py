"""Where conversations live: settings, the S3 store as deployed (403 for a missing key), the local sweep,
and one turn per conversation at a time."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from agentcore_app.app import create_app
from agentcore_app.conversation.settings import (
    CONVERSATIONS_ENV,
    IDLE_ENV,
    MAX_AGE_ENV,
    TURNS_ENV,
    ConversationSettings,
    S3Location,
    default_state_dir,
    parse_location,
)
from agentcore_app.conversation.store import ConversationStore, sweep_state_dir
from agentcore_app.errors import ConversationSettingError, TurnRefused
from agentcore_app.local.client import run_turn
from agentcore_app.local.stack import free_port, serve_asgi
from tests.agentcore_app.fake_s3 import FakeS3
from tests.agentcore_app.history_model import HistoryScriptedModel, texts, user_prompts

BUCKET = "strands-kokoro-conversations-test"


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STRANDS_KOKORO_CACHE", str(tmp_path))
    assert ConversationSettings.from_env({}).location == tmp_path / "conversations" == default_state_dir()
    settings = ConversationSettings.from_env(
        {
            CONVERSATIONS_ENV: "s3://my-bucket/some/prefix/",
            TURNS_ENV: "5",
            IDLE_ENV: "60",
            MAX_AGE_ENV: "600.5",
        }
    )
    assert settings == ConversationSettings(S3Location("my-bucket", "some/prefix"), 5, 60.0, 600.5)
    assert ConversationSettings.from_env({CONVERSATIONS_ENV: "OFF"}).location is None
    assert parse_location("~/convs") == Path.home() / "convs"


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({TURNS_ENV: "0"}, "at least 1"),
        ({TURNS_ENV: "many"}, "is not a int"),
        ({IDLE_ENV: "-1"}, "positive number of seconds"),
        ({CONVERSATIONS_ENV: "s3://Bad_Bucket/x"}, "is not an S3 bucket name"),
        ({CONVERSATIONS_ENV: "https://example.com/x"}, "use a directory, s3://<bucket>/<prefix> or 'off'"),
        ({CONVERSATIONS_ENV: "s3:/bad"}, "s3: takes two slashes"),
        ({CONVERSATIONS_ENV: "S3://bucket"}, "s3:// is written in lower case"),
        ({CONVERSATIONS_ENV: "file:///tmp/x"}, "use a directory, s3://<bucket>/<prefix> or 'off'"),
        ({CONVERSATIONS_ENV: "convs:today"}, "a directory whose name has a colon is written ./convs:today"),
    ],
)
def test_bad_settings_are_refused_when_the_app_is_built(env: dict[str, str], says: str) -> None:
    with pytest.raises(ConversationSettingError, match=re.escape(says)) as refused:
        ConversationSettings.from_env(env)
    where = CONVERSATIONS_ENV in env
    assert refused.value.code == ("bad_conversations_location" if where else "bad_conversation_setting")


def test_a_directory_with_a_colon_is_still_a_directory() -> None:
    assert parse_location("./convs:today") == Path("convs:today")
    assert parse_location("/var/lib/convs:today") == Path("/var/lib/convs:today")


def test_a_conversation_kept_in_s3_as_deployed_remembers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two turns through the real app, stored by the S3 session manager under the prefix only; the fake
    S3 answers a missing key with 403 as S3 does for a role that may list only that prefix."""
    fake = FakeS3(BUCKET, "conversations/")
    real_session = boto3.Session
    monkeypatch.setattr(boto3, "Session", lambda **kw: fake.attach(real_session(**kw)))
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "AKIDTEST"),
        ("AWS_SECRET_ACCESS_KEY", "x"),
        ("AWS_REGION", "eu-west-1"),
    ):
        monkeypatch.setenv(name, value)

    def recall(messages: list[Any]) -> str:
        prompts = user_prompts(messages)
        return "Noted." if len(prompts) == 1 else f"You said: {prompts[0]}"

    model = HistoryScriptedModel(recall, tokens_per_s=200)
    session_id = f"s3-{uuid.uuid4()}"

    async def scenario() -> list[str]:
        app = create_app(
            speech_endpoint=f"ws://127.0.0.1:{free_port()}",
            model=lambda: model,
            tools=[],
            conversations=ConversationSettings(S3Location(BUCKET, "conversations")),
            speech_options={"reconnect_attempts": 0},
        )
        app.logger.setLevel(logging.WARNING)
        async with serve_asgi(app) as url, httpx.AsyncClient(timeout=60) as http:
            return [
                (await run_turn(url, prompt, "bidi", http_client=http, session_id=session_id)).text
                for prompt in ("Otters first.", "What came first?")
            ]

    assert asyncio.run(scenario()) == ["Noted.", "You said: Otters first."]
    assert texts(model.received[1]) == [
        ("user", "Otters first."),
        ("assistant", "Noted."),
        ("user", "What came first?"),
    ]
    assert fake.objects and all(
        key.startswith(f"conversations/session_{session_id}/") for key in fake.objects
    )
    agent = json.loads(fake.objects[f"conversations/session_{session_id}/agents/agent_voice/agent.json"])
    assert agent["conversation_manager_state"]["__name__"] == "TurnWindowConversationManager"
    assert ("HEAD", f"conversations/session_{session_id}/session.json") in fake.calls  # the 403 path ran


def _conversation_folder(root: Path, name: str, *, created: float, last: float | None) -> Path:
    folder = root / f"session_{name}"
    agent = folder / "agents" / "agent_voice"
    agent.mkdir(parents=True)
    (folder / "session.json").write_text("{}")
    os.utime(folder / "session.json", (created, created))
    if last is not None:
        (agent / "agent.json").write_text("{}")
        os.utime(agent / "agent.json", (last, last))
    return folder


def test_the_sweep_removes_idle_and_old_conversations_only(tmp_path: Path) -> None:
    now = time.time()
    settings = ConversationSettings(tmp_path, idle_expiry_s=100, max_age_s=1000)
    fresh = _conversation_folder(tmp_path, "fresh", created=now - 500, last=now - 10)
    idle = _conversation_folder(tmp_path, "idle", created=now - 500, last=now - 200)
    old = _conversation_folder(tmp_path, "old", created=now - 2000, last=now - 10)
    never_answered = _conversation_folder(tmp_path, "never", created=now - 200, last=None)
    in_use = _conversation_folder(tmp_path, "busy", created=now - 2000, last=now - 2000)
    (tmp_path / "unrelated.txt").write_text("kept")
    assert sweep_state_dir(tmp_path, settings, now=now, keep={"busy"}) == 3
    assert fresh.exists() and in_use.exists() and (tmp_path / "unrelated.txt").exists()
    assert not idle.exists() and not old.exists() and not never_answered.exists()
    assert sweep_state_dir(tmp_path / "missing", settings, now=now, keep=set()) == 0


def test_one_turn_per_conversation_at_a_time(tmp_path: Path) -> None:
    store = ConversationStore(ConversationSettings(tmp_path))
    session_id = f"busy-{uuid.uuid4()}"
    other_id = f"other-{uuid.uuid4()}"

    async def scenario() -> tuple[str, bool]:
        async with store.turn(session_id):
            with pytest.raises(TurnRefused) as busy:
                async with store.turn(session_id, wait_s=0.2):
                    pass
            async with store.turn(other_id, wait_s=0.2):  # another conversation is not held up
                pass
        async with store.turn(session_id, wait_s=0.2):  # free again once the first turn ended
            pass
        return busy.value.code, not store._locks  # no lock is left behind

    assert asyncio.run(scenario()) == ("conversation_busy", True)


def test_an_unreachable_store_is_a_coded_refusal(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    store = ConversationStore(ConversationSettings(blocked / "conversations"))

    async def scenario() -> str:
        with pytest.raises(TurnRefused) as refused:
            async with store.turn(f"x-{uuid.uuid4()}"):
                pass
        return refused.value.code

    assert asyncio.run(scenario()) == "conversation_unavailable"
