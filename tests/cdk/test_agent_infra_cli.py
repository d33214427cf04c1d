"""``agent-infra``: one console script (:func:`cdk.cli.agent_main`); subcommands parse and are delegated."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from cdk import cli

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


def test_serve_is_delegated_with_fake_local_commands_module(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    fake = types.ModuleType("cdk.local_commands")
    fake.serve_main = lambda argv: calls.append(list(argv)) or 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cdk.local_commands", fake)
    assert cli.agent_main(["serve", "--local", "--port", "9000"]) == 3
    assert calls == [["--local", "--port", "9000"]]
