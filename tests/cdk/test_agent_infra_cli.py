"""``agent-infra``: one console script (:func:`cdk.cli.agent_main`); subcommands parse and are delegated."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentcore_app.local.stack import free_port
from cdk import cli
from tests.model_server_process import RunningServer

pytestmark = pytest.mark.slow

AGENT_INFRA = str(Path(sys.executable).parent / "agent-infra")


def test_console_script_help_lists_every_command() -> None:
    out = subprocess.run([AGENT_INFRA, "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("demo", "serve", "deploy", "diff", "synth", "destroy"):
        assert command in out


def test_demo_help_shows_its_options() -> None:
    out = subprocess.run([AGENT_INFRA, "demo", "--help"], capture_output=True, text=True, check=True).stdout
    for option in ("--local", "--endpoint-url", "--prompt", "--json", "--out-dir"):
        assert option in out


def test_local_and_endpoint_url_exclude_each_other() -> None:
    result = subprocess.run(
        [AGENT_INFRA, "demo", "--local", "--endpoint-url", "http://x:1"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "not allowed with" in result.stderr


def test_no_command_is_a_usage_error() -> None:
    result = subprocess.run([AGENT_INFRA], capture_output=True, text=True)
    assert result.returncode == 2 and "COMMAND" in result.stderr


@pytest.mark.parametrize("command", ["deploy", "diff", "synth", "destroy"])
def test_cdk_commands_are_delegated_to_the_recording_agent_infra(
    monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(cli, "agent_infra", lambda argv: calls.append(list(argv)) or 0)
    assert cli.agent_main([command, "--profile", "dev"]) == 0
    assert calls == [[command, "--profile", "dev"]]


@pytest.mark.parametrize("command", ["demo", "serve"])
def test_demo_and_serve_run_the_agent_apps_launcher_with_a_recording_popen_double(
    monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    calls: list[list[str]] = []

    class RecordingPopen:
        def __init__(self, argv: list[str]) -> None:
            calls.append(list(argv))

        def wait(self) -> int:
            return 3

    monkeypatch.setattr(cli.subprocess, "Popen", RecordingPopen)
    assert cli.agent_main([command, "--local", "--port", "9000"]) == 3
    assert calls == [
        [sys.executable, "-m", "agentcore_app.local.commands", command, "--local", "--port", "9000"]
    ]


# --------------------------------------------------------------------- what a newcomer sees go wrong


def _run(
    *argv: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=240, env=env, cwd=cwd)


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The whole of stderr, which must be one line (and no traceback)."""
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["deploy", "diff", "synth", "destroy"])
def test_each_cdk_command_names_itself_in_its_help_and_its_errors(command: str) -> None:
    shown = _run(AGENT_INFRA, command, "--help")
    assert shown.returncode == 0 and shown.stdout.startswith(f"usage: agent-infra {command} [-h]")
    refused = _run(AGENT_INFRA, command)  # --bedrock-model-id is required
    assert refused.returncode == 2
    assert f"agent-infra {command}: error: the following arguments are required" in refused.stderr


@pytest.mark.parametrize(
    "argv",
    [
        [AGENT_INFRA, "synth", "--bedrock-model-id", "X"],
        [str(Path(sys.executable).parent / "speech-infra"), "synth", "kokoro-82m", "--weights-dir", "none"],
    ],
    ids=["agent", "speech"],
)
def test_the_in_process_synth_prints_no_node_end_of_life_banner(argv: list[str], tmp_path: Path) -> None:
    """Both settings fail once the CDK (and so node) has started: the banner would be printed by then.

    The banner silenced is node 20's (cli.QUIET_NODE_ENV); another node prints its own, or none.
    """
    env = {k: v for k, v in os.environ.items() if k != "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"}
    result = _run(*argv, "--output", str(tmp_path / "out"), env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Node 20 is end-of-life" not in result.stdout + result.stderr
    assert _one_line(result).startswith("error: ")


@pytest.mark.parametrize(
    ("transport", "says"),
    [("sse", "ConnectError"), ("ws", "ConnectionRefusedError")],
)
def test_demo_against_nothing_listening_is_one_line_naming_the_url(
    transport: str, says: str, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = _run(
        AGENT_INFRA, "demo", "--endpoint-url", url, "--transport", transport, "--out-dir", str(tmp_path)
    )
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]  # after the "bidi: asking ..." progress line
    assert "Traceback" not in result.stderr
    assert last.startswith(f"agent-infra demo: {url} did not answer (") and says in last
    assert not any(tmp_path.iterdir())  # nothing reported, nothing written


@pytest.mark.parametrize("transport", ["sse", "ws"])
def test_demo_pointed_at_the_model_server_says_it_needs_the_agent_app(
    transport: str, model_server: RunningServer, tmp_path: Path
) -> None:
    """The model server's port is an easy mix-up with the agent app's: it answers, so "did not answer"
    would mislead."""
    url = model_server.http_url
    argv = ("demo", "--endpoint-url", url, "--transport", transport, "--out-dir", str(tmp_path))
    result = _run(AGENT_INFRA, *argv)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"agent-infra demo: {url} answered, but not as an agent app (")
    assert last.endswith("the demo talks to the agent app (python -m agentcore_app), not to the model server")


def test_a_bad_demo_flag_is_reported_with_the_demos_usage() -> None:
    result = _run(AGENT_INFRA, "demo", "--bogus")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: agent-infra demo ")
    assert "agent-infra demo: error: unrecognized arguments: --bogus" in result.stderr


@pytest.mark.parametrize("transport", ["sse", "ws"])
def test_demo_against_a_runtime_without_aws_credentials_is_one_line(transport: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env |= {"AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}
    arn = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/x"
    argv = ("demo", "--endpoint-url", arn, "--transport", transport, "--out-dir", str(tmp_path))
    result = _run(AGENT_INFRA, *argv, env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    said = "could not be asked (NoCredentialsError: Unable to locate credentials)"
    assert last == f"agent-infra demo: {arn} {said}"


def test_demo_endpoint_url_without_a_scheme_is_refused_before_anything_is_asked(tmp_path: Path) -> None:
    result = _run(AGENT_INFRA, "demo", "--endpoint-url", "127.0.0.1:8080", "--out-dir", str(tmp_path))
    assert result.returncode == 2
    assert _one_line(result).startswith("agent-infra demo: --endpoint-url '127.0.0.1:8080': use ")


def test_a_model_for_an_app_that_is_already_running_is_refused_not_ignored(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = _run(
        AGENT_INFRA, "demo", "--endpoint-url", url, "--model", "bedrock:x", "--out-dir", str(tmp_path)
    )
    assert result.returncode == 2
    assert _one_line(result).startswith(
        f"agent-infra demo: --model chooses the model of the app --local starts; the app at {url}"
    )


@pytest.mark.parametrize("command", ["demo --local", "serve"])
def test_an_unusable_model_setting_stops_the_launcher_in_one_line(command: str, tmp_path: Path) -> None:
    """Checked before the weights, the model server or the LLM start (as python -m agentcore_app does)."""
    argv = [AGENT_INFRA, *command.split(), "--model", "nope:x"]
    argv += ["--out-dir", str(tmp_path)] if command.startswith("demo") else ["--log-dir", str(tmp_path)]
    result = _run(*argv)
    assert result.returncode == 2
    line = _one_line(result)
    assert line.startswith(f"agent-infra {command.split()[0]}: unknown model setting 'nope:x'")
    assert not any(tmp_path.iterdir())  # no model server was started (it would have logged here)


def test_serve_offers_the_engines_the_model_server_takes() -> None:
    from agentcore_app.local.commands import serve_parser
    from tts_container.engines.loader import ENGINE_NAMES

    (engine,) = [a for a in serve_parser()._actions if a.dest == "engine"]
    assert tuple(engine.choices or ()) == ENGINE_NAMES
    result = _run(AGENT_INFRA, "serve", "--engine", "bogus")
    assert result.returncode == 2 and "argument --engine: invalid choice: 'bogus'" in result.stderr


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--llm-pace", "0"], "--llm-pace 0.0: give a positive number of tokens per second"),
        (["--llm-pace", "nan"], "--llm-pace nan: give a positive number of tokens per second"),
        (["--llm-pace", "50", "--model", "bedrock:x"], "--llm-pace paces the embedded model"),
        (["--llm-pace", "50", "--endpoint-url", "http://127.0.0.1:9"], "--llm-pace paces the embedded model"),
        (["--repeat", "0"], "argument --repeat: '0': give a whole number of rounds"),
        (["--repeat", "2", "--turns", "a", "b"], "--repeat compares one prompt"),
    ],
)
def test_a_pace_or_repeat_the_demo_cannot_use_is_one_line_before_anything_starts(
    extra: list[str], says: str, tmp_path: Path
) -> None:
    result = _run(AGENT_INFRA, "demo", *extra, "--out-dir", str(tmp_path))
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not any(tmp_path.iterdir())
