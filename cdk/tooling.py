"""What the CLIs need from the machine: the CDK CLI, Docker, AWS credentials, deployed stack states.

Each check fails with :class:`ToolingError`, whose message says what is missing and how to get it, so
``speech-infra`` / ``agent-infra`` never die in the middle of a deploy with a bare traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

CDK_CLI_PACKAGE = "aws-cdk@2"
DEPLOYED_STATES = frozenset(
    {
        "CREATE_COMPLETE",
        "UPDATE_COMPLETE",
        "UPDATE_ROLLBACK_COMPLETE",
        "IMPORT_COMPLETE",
        "IMPORT_ROLLBACK_COMPLETE",
    }
)
"""CloudFormation states in which a stack's resources exist and are usable."""

StackStatus = Callable[[str], "str | None"]
"""Maps a stack name to its CloudFormation status, or ``None`` when no such stack exists."""


class ToolingError(RuntimeError):
    """A prerequisite is missing; the message is the whole answer for the user."""


def cdk_command() -> list[str]:
    """A ``cdk`` on PATH, else ``npx --yes aws-cdk@2`` (node's package runner fetches it once)."""
    found = shutil.which("cdk")
    if found:
        return [found]
    npx = shutil.which("npx")
    if npx:
        return [npx, "--yes", CDK_CLI_PACKAGE]
    raise ToolingError(
        "the AWS CDK CLI is needed for deploy/diff/destroy: install Node.js 20+ (which brings npx) "
        f"or run `npm install -g {CDK_CLI_PACKAGE}`. (`synth` works without it.)"
    )


def require_docker(*, cross_arm64: bool = False) -> None:
    """Images are built when CDK publishes them, so deploy needs a running Docker daemon."""
    docker = shutil.which("docker")
    if docker is None:
        raise ToolingError("Docker is needed to build the container images on deploy: install Docker")
    if _run_quiet([docker, "info"]) != 0:
        raise ToolingError("Docker is installed but its daemon is not reachable: start Docker and retry")
    if cross_arm64 and _run_quiet([docker, "buildx", "version"]) != 0:
        raise ToolingError(
            "the agent image is linux/arm64 (AgentCore runs on Graviton): install Docker buildx, and on "
            "an x86 machine register QEMU for arm64: "
            "docker run --privileged --rm tonistiigi/binfmt --install arm64"
        )


def require_credentials(profile: str | None, region: str | None) -> None:
    """Fail before the CDK CLI does, with a message that says where credentials come from."""
    help_text = (
        "no AWS credentials found: run `aws configure` (or `aws sso login --profile P` and pass "
        "--profile P), or set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
    )
    try:
        import boto3
    except ImportError:
        if os.environ.get("AWS_ACCESS_KEY_ID") or profile or os.environ.get("AWS_PROFILE"):
            return
        if (Path.home() / ".aws" / "credentials").is_file() or (Path.home() / ".aws" / "config").is_file():
            return
        raise ToolingError(help_text) from None
    try:
        session = boto3.Session(profile_name=profile, region_name=region)
    except Exception as exc:  # botocore's ProfileNotFound and friends
        raise ToolingError(f"AWS profile problem: {exc}") from None
    if session.get_credentials() is None:
        raise ToolingError(help_text)
    if session.region_name is None:
        raise ToolingError("no AWS region: pass --region or set AWS_REGION")


def cloudformation_status(profile: str | None, region: str | None) -> StackStatus:
    """A :data:`StackStatus` backed by CloudFormation (boto3, else the AWS CLI)."""
    try:
        import boto3
    except ImportError:
        return _status_via_aws_cli(profile, region)
    client = boto3.Session(profile_name=profile, region_name=region).client("cloudformation")

    def status(stack_name: str) -> str | None:
        try:
            stacks = client.describe_stacks(StackName=stack_name)["Stacks"]
        except client.exceptions.ClientError as exc:
            if "does not exist" in str(exc):
                return None
            raise ToolingError(f"cannot read stack {stack_name}: {exc}") from None
        return str(stacks[0]["StackStatus"]) if stacks else None

    return status


def _status_via_aws_cli(profile: str | None, region: str | None) -> StackStatus:
    aws = shutil.which("aws")
    if aws is None:
        raise ToolingError("checking the deploy order needs boto3 or the AWS CLI: `uv pip install boto3`")
    base = [aws, "cloudformation", "describe-stacks", "--output", "json"]
    base += ["--profile", profile] if profile else []
    base += ["--region", region] if region else []

    def status(stack_name: str) -> str | None:
        done = subprocess.run(
            [*base, "--stack-name", stack_name], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            if "does not exist" in done.stderr:
                return None
            raise ToolingError(f"cannot read stack {stack_name}: {done.stderr.strip()}")
        stacks = json.loads(done.stdout).get("Stacks", [])
        return str(stacks[0]["StackStatus"]) if stacks else None

    return status


def require_deployed(status: StackStatus, stacks: Sequence[str], *, needed_by: str, fix: str) -> None:
    """Enforce deploy order: every stack in ``stacks`` must exist in a usable state."""
    for name in stacks:
        state = status(name)
        if state not in DEPLOYED_STATES:
            shown = "not deployed" if state is None else f"in state {state}"
            raise ToolingError(f"{needed_by} needs stack {name}, which is {shown}: {fix}")


def require_absent(status: StackStatus, stacks: Sequence[str], *, blocking: str, fix: str) -> None:
    """Enforce destroy order: nothing that depends on ``blocking`` may still be deployed."""
    for name in stacks:
        state = status(name)
        if state is not None and state != "DELETE_COMPLETE":
            raise ToolingError(f"stack {name} ({state}) still uses {blocking}: {fix}")


def _run_quiet(command: Sequence[str]) -> int:
    try:
        return subprocess.run(list(command), capture_output=True, timeout=60, check=False).returncode
    except (OSError, subprocess.TimeoutExpired):
        return 1
