"""``speech-infra`` / ``agent-infra`` CDK commands: offline synth, clear failures, enforced order."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from cdk.cli import agent_infra, speech_main
from cdk.config import AGENT_STACKS, SPEECH_STACKS
from cdk.tooling import ToolingError, require_absent, require_deployed
from tests.cdk.synth_support import PROFILE_MODEL_ID

# A full synth takes 20-60 s, several minutes on a loaded CI machine: more than the default 300 s.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture
def bare_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No cdk, npx, docker or aws on PATH, no AWS credentials, an empty home."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return bin_dir


def install_recording_cdk_stub(bin_dir: Path) -> Path:
    """A stand-in ``cdk`` executable that records its arguments (the real one needs an AWS account)."""
    record = bin_dir.parent / "cdk-calls.jsonl"
    script = bin_dir / "cdk"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return record


def test_list_names_the_model_and_its_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    assert speech_main(["list"]) == 0
    out = capsys.readouterr().out
    assert "kokoro-82m" in out and all(stack in out for stack in SPEECH_STACKS)


def test_unknown_model_is_an_argument_error() -> None:
    with pytest.raises(SystemExit) as exit_info:
        speech_main(["deploy", "kokoro-83m"])
    assert exit_info.value.code == 2


def test_agent_synth_works_offline_in_process_and_reports_cdk_nag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = agent_infra(["synth", "--bedrock-model-id", PROFILE_MODEL_ID, "--output", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "cdk-nag AwsSolutions: 0 unacknowledged findings" in out
    for stack in AGENT_STACKS:
        assert (tmp_path / f"{stack}.template.json").is_file()
    assert not (tmp_path / f"{SPEECH_STACKS[0]}.template.json").exists()


def test_speech_synth_without_weights_says_what_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty-cache"
    code = speech_main(
        ["synth", "kokoro-82m", "--weights-dir", str(empty), "--output", str(tmp_path / "out")]
    )
    assert code == 2
    assert "kokoro-weights fetch" in capsys.readouterr().err


def test_deploy_without_the_cdk_cli_fails_clearly(
    bare_machine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert speech_main(["deploy", "kokoro-82m"]) == 2
    assert "AWS CDK CLI" in capsys.readouterr().err


def test_deploy_without_credentials_fails_before_running_the_stub_cdk(
    bare_machine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = install_recording_cdk_stub(bare_machine)
    assert agent_infra(["deploy", "--bedrock-model-id", PROFILE_MODEL_ID]) == 2
    assert "no AWS credentials" in capsys.readouterr().err
    assert not record.exists()


def test_speech_deploy_without_docker_fails_before_running_the_stub_cdk(
    bare_machine: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record = install_recording_cdk_stub(bare_machine)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-not-real")
    assert speech_main(["deploy", "kokoro-82m", "--region", "us-east-1"]) == 2
    assert "Docker" in capsys.readouterr().err
    assert not record.exists()


def test_speech_diff_runs_the_cdk_cli_on_this_app_with_the_cli_context(
    bare_machine: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_weights_cache: Path
) -> None:
    record = install_recording_cdk_stub(bare_machine)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-not-real")
    argv = ["diff", "kokoro-82m", "--region", "eu-west-1", "--instance-type", "ml.g6.xlarge"]
    code = speech_main([*argv, "--weights-dir", str(fake_weights_cache), "--output", str(tmp_path)])
    assert code == 0
    (called,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert called[: 1 + len(SPEECH_STACKS)] == ["diff", *SPEECH_STACKS]
    assert called[called.index("--app") + 1].endswith(" -m cdk.app")
    contexts = {called[i + 1] for i, word in enumerate(called) if word == "--context"}
    assert contexts == {
        "kokoro:stacks=speech",
        "kokoro:instance_type=ml.g6.xlarge",
        f"kokoro:weights_dir={fake_weights_cache}",
    }


def test_speech_options_reach_the_cdk_cli_as_context(
    bare_machine: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_weights_cache: Path
) -> None:
    record = install_recording_cdk_stub(bare_machine)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-not-real")
    argv = ["diff", "kokoro-82m", "--region", "eu-west-1", "--no-network-isolation", "--tts-run-as-root"]
    argv += [
        "--log-retention-days",
        "90",
        "--weights-dir",
        str(fake_weights_cache),
        "--output",
        str(tmp_path),
    ]
    assert speech_main(argv) == 0
    (called,) = [json.loads(line) for line in record.read_text().splitlines()]
    contexts = {called[i + 1] for i, word in enumerate(called) if word == "--context"}
    assert {
        "kokoro:network_isolation=false",
        "kokoro:tts_run_as_root=true",
        "kokoro:log_retention_days=90",
    } <= contexts


def test_agent_log_retention_reaches_the_cdk_cli(bare_machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = install_recording_cdk_stub(bare_machine)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-not-real")
    argv = [
        "diff",
        "--bedrock-model-id",
        PROFILE_MODEL_ID,
        "--region",
        "eu-west-1",
        "--log-retention-days",
        "7",
        "--conversation-retention-days",
        "5",
    ]
    assert agent_infra(argv) == 0
    (called,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert "kokoro:log_retention_days=7" in called
    assert "kokoro:conversation_retention_days=5" in called


@pytest.mark.parametrize("days", ["31", "0", "forever"])
def test_a_retention_cloudwatch_does_not_offer_is_an_argument_error(days: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        speech_main(["synth", "kokoro-82m", "--log-retention-days", days])
    assert exit_info.value.code == 2


def test_speech_diff_without_a_weight_cache_says_what_to_run(
    bare_machine: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record = install_recording_cdk_stub(bare_machine)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-not-real")
    assert speech_main(["diff", "kokoro-82m", "--region", "eu-west-1"]) == 2
    assert "kokoro-weights fetch" in capsys.readouterr().err
    assert not record.exists()


def fake_stack_status(states: dict[str, str]) -> object:
    """A stand-in for CloudFormation describe-stacks: name -> status, None when absent."""
    return states.get


def test_agent_deploy_order_requires_every_speech_stack() -> None:
    status = fake_stack_status({SPEECH_STACKS[0]: "CREATE_COMPLETE", SPEECH_STACKS[1]: "UPDATE_COMPLETE"})
    with pytest.raises(ToolingError, match=f"{SPEECH_STACKS[2]}, which is not deployed.*speech-infra deploy"):
        require_deployed(
            status, SPEECH_STACKS, needed_by="the agent", fix="run `speech-infra deploy kokoro-82m`"
        )
    failed = fake_stack_status(dict.fromkeys(SPEECH_STACKS, "ROLLBACK_COMPLETE"))
    with pytest.raises(ToolingError, match="in state ROLLBACK_COMPLETE"):
        require_deployed(failed, SPEECH_STACKS, needed_by="the agent", fix="redeploy")
    require_deployed(
        fake_stack_status(dict.fromkeys(SPEECH_STACKS, "UPDATE_COMPLETE")),
        SPEECH_STACKS,
        needed_by="x",
        fix="y",
    )


def test_speech_destroy_is_refused_while_the_agent_is_deployed() -> None:
    status = fake_stack_status({AGENT_STACKS[1]: "CREATE_COMPLETE"})
    with pytest.raises(ToolingError, match="agent-infra destroy"):
        require_absent(status, AGENT_STACKS, blocking="the speech endpoint", fix="agent-infra destroy first")
    require_absent(fake_stack_status({}), AGENT_STACKS, blocking="the speech endpoint", fix="n/a")
