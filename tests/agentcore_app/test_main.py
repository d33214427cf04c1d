"""``python -m agentcore_app`` as a newcomer runs it: a setting it cannot use stops it in one coded line
before it listens; once it listens it says where, in one line; its help is plain text.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from agentcore_app.app import create_app
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.local.stack import free_port
from strands_kokoro.sessions import EndpointError, check_endpoint

pytestmark = pytest.mark.slow

APP = [sys.executable, "-m", "agentcore_app"]


def _refused(*argv: str, cwd: Path) -> str:
    """The one line ``python -m agentcore_app`` stops with (exit status 2, no traceback)."""
    result = subprocess.run(
        [*APP, "--port", str(free_port()), *argv], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("s3:/bad", "s3: takes two slashes"),
        ("gs://bucket/x", "use a directory, s3://<bucket>/<prefix> or 'off'"),
    ],
)
def test_a_malformed_conversations_url_stops_the_app_before_it_listens(
    value: str, says: str, tmp_path: Path
) -> None:
    line = _refused("--conversations", value, cwd=tmp_path)
    assert line.startswith(f"error: bad_conversations_location: --conversations={value!r}: ") and says in line
    assert not any(tmp_path.iterdir())  # no ./s3:/bad/... directory


def test_an_unknown_speech_endpoint_scheme_stops_the_app_before_it_listens(tmp_path: Path) -> None:
    line = _refused("--speech-endpoint", "foo://x", cwd=tmp_path)
    assert line.startswith("error: unknown_endpoint_scheme: cannot open 'foo://x'")


def test_create_app_refuses_a_speech_endpoint_no_session_can_open() -> None:
    with pytest.raises(EndpointError) as refused:
        create_app(
            speech_endpoint="foo://x", model="local", tools=[], conversations=ConversationSettings(None)
        )
    assert refused.value.code == "unknown_endpoint_scheme"


@pytest.mark.parametrize(
    ("endpoint", "code"),
    [
        ("foo://x", "unknown_endpoint_scheme"),
        ("sagemaker:", "bad_endpoint"),
        ("127.0.0.1:8081", "unknown_endpoint_scheme"),
    ],
)
def test_check_endpoint_opens_nothing_and_codes_what_no_session_takes(endpoint: str, code: str) -> None:
    with pytest.raises(EndpointError) as refused:
        check_endpoint(endpoint)
    assert refused.value.code == code
    assert [check_endpoint(e) for e in ("ws://h:1", "https://h", "sagemaker:kokoro?region=x")] == [
        "ws",
        "https",
        "sagemaker",
    ]


def test_the_app_says_where_it_listens_when_it_starts() -> None:
    speech, port = f"ws://127.0.0.1:{free_port()}", free_port()
    argv = [
        *APP,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--speech-endpoint",
        speech,
        "--conversations",
        "off",
    ]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.fullmatch(r"agent app on (http://127\.0\.0\.1:\d+) \(speech (\S+), model local\)\n", line)
        assert found is not None, line
        assert found.group(1) == f"http://127.0.0.1:{port}" and found.group(2) == speech
        deadline = time.monotonic() + 60
        while True:  # the URL it named answers once uvicorn is up
            try:
                ping = httpx.get(found.group(1) + "/ping", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the app never answered on the URL it named"
                time.sleep(0.1)
        assert ping.status_code == 200 and ping.json()["status"] in ("Healthy", "HealthyBusy")
        while ping.json()["status"] == "HealthyBusy":  # warming the embedded model; then idle
            assert time.monotonic() < deadline + 120, "the model's warm-up never ended"
            time.sleep(0.1)
            ping = httpx.get(found.group(1) + "/ping", timeout=5)
        assert ping.json()["status"] == "Healthy"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_help_is_plain_text() -> None:
    env = {**os.environ, "COLUMNS": "200"}
    shown = subprocess.run([*APP, "--help"], capture_output=True, text=True, timeout=120, env=env, check=True)
    assert "``" not in shown.stdout and "python -m tts_container --port 8081" in shown.stdout


def test_the_default_host_is_the_sdks_own_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentcore_app.__main__ import default_host

    monkeypatch.setattr("os.path.exists", lambda path: False)
    monkeypatch.delenv("DOCKER_CONTAINER", raising=False)
    assert default_host() == "127.0.0.1"
    monkeypatch.setenv("DOCKER_CONTAINER", "1")
    assert default_host() == "0.0.0.0"
    monkeypatch.delenv("DOCKER_CONTAINER")
    monkeypatch.setattr("os.path.exists", lambda path: path == "/.dockerenv")
    assert default_host() == "0.0.0.0"


def test_a_flag_overrides_a_bad_setting_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the app module reads no setting; ``agentcore_app.app:app`` is built on first use."""
    import importlib

    from agentcore_app.errors import SettingError
    from agentcore_app.local.commands import check_settings

    monkeypatch.setenv("STRANDS_KOKORO_MODEL", "gpt4")
    app_module = importlib.reload(importlib.import_module("agentcore_app.app"))
    check_settings("local")  # the flag's model, over the environment's
    with pytest.raises(SettingError):
        _ = app_module.app  # the SDK's entrypoint object reads the environment


def test_a_taken_port_stops_the_app_before_it_says_it_listens(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = _refused("--host", "127.0.0.1", "--port", str(port), "--conversations", "off", cwd=tmp_path)
    assert line == f"error: cannot serve on 127.0.0.1:{port}: Address already in use"
