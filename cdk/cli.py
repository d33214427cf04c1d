"""The two console scripts: ``speech-infra`` and ``agent-infra``; the CDK commands drive the app in order.

    speech-infra deploy|diff|synth|destroy kokoro-82m [--instance-type ml.g5.xlarge] [...] | list
    agent-infra deploy|diff|synth|destroy --bedrock-model-id ID [--endpoint-name kokoro-82m] [...]
    agent-infra demo|serve [--local] [...]   (run ``python -m agentcore_app.local.commands``)

``synth`` runs in-process and prints the cdk-nag verdict; ``deploy``, ``diff`` and ``destroy`` run the
CDK CLI, each first saying what it lacks. ``agent-infra deploy`` refuses until the speech stacks exist,
``speech-infra destroy`` while the agent still points at the endpoint. Only the commands that synthesize
import the CDK app, and no other package of this project is imported.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path

from cdk.config import (
    AGENT_STACKS,
    DEFAULT_LOG_RETENTION_DAYS,
    LOG_RETENTION_DAYS,
    MODEL_NAME,
    REPO_ROOT,
    SPEECH_STACKS,
    ConfigError,
    SpeechConfig,
    speech_config,
)
from cdk.tooling import (
    ToolingError,
    cdk_command,
    cloudformation_status,
    require_absent,
    require_credentials,
    require_deployed,
    require_docker,
)

ACTIONS = ("deploy", "diff", "synth", "destroy")
LOCAL_LAUNCHER = "agentcore_app.local.commands"
LOCAL_COMMANDS = ("demo", "serve")
# An interrupt the launcher did not get with this process (not from a terminal) is passed on after this.
FORWARD_AFTER_S = 2.0
DEMO_HELP = "hear the agent speak; bidi vs batch first-audio time (see `agent-infra demo --help`)"
DEFAULT_OUTPUT = REPO_ROOT / "cdk" / "cdk.out"
# jsii's node prints an 11-line banner per start on a node it no longer supports; the value lists the
# majors to keep quiet about (20: the oldest the docs ask for, "Node.js 20+"). Both the in-process synth
# and the CDK CLI's subprocess start node, so both get it from quiet_node().
QUIET_NODE_ENV = {"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}

SPEECH_LEFT_BEHIND = """\
Left in place on purpose (they hold data a redeploy reuses):
  - the weights bucket and its access-log bucket (RemovalPolicy RETAIN; versioned weights). Remove them
    with: aws s3 rb s3://<bucket> --force   after deleting every object version (S3 console: Empty)
  - the tts_container image and the zipped weights in the CDK bootstrap assets (ECR repository
    cdk-<qualifier>-container-assets-<account>-<region>, bucket cdk-<qualifier>-assets-<account>-<region>),
    shared by every CDK app in the account/region. Remove unused ones with: npx aws-cdk@2 gc --unstable=gc
The endpoint's and the copy job's log groups were deleted with their stacks."""

AGENT_LEFT_BEHIND = """\
Left in place on purpose:
  - the conversations bucket and its access-log bucket (RemovalPolicy RETAIN: S3 cannot delete a bucket
    that holds objects). Their lifecycle rules empty them (conversations after the retention days, access
    logs after the log retention); then remove them with: aws s3 rb s3://<bucket>   (or --force sooner)
  - the agent image in the CDK bootstrap ECR repository (shared by every CDK app in the account/region).
    Remove unused images with: npx aws-cdk@2 gc --unstable=gc
The runtime's log groups were deleted with the runtime stack."""


def speech_main(argv: Sequence[str] | None = None) -> int:
    """Entry of the ``speech-infra`` console script."""
    parser = argparse.ArgumentParser(
        prog="speech-infra", description="Deploy Kokoro-82M as a SageMaker endpoint."
    )
    commands = parser.add_subparsers(dest="action", required=True, metavar="COMMAND")
    commands.add_parser("list", help="the models this CLI deploys and their stacks")
    for action in ACTIONS:
        sub = commands.add_parser(action, help=f"{action} the speech stacks")
        sub.add_argument("model", choices=[MODEL_NAME], help="the speech model")
        sub.add_argument("--instance-type", help="SageMaker instance type (default ml.g5.xlarge)")
        sub.add_argument("--instance-count", type=int, help="initial and minimum instances (default 1)")
        sub.add_argument("--max-instance-count", type=int, help="autoscaling ceiling (default 4)")
        sub.add_argument(
            "--weights-dir", type=Path, help="weight cache to upload (default: kokoro-weights path)"
        )
        sub.add_argument(
            "--no-network-isolation",
            action="store_true",
            help="let the model container reach the network (only if bidi fails with isolation on)",
        )
        sub.add_argument(
            "--tts-run-as-root",
            action="store_true",
            help="build the model server image to run as root (only if /opt/ml is unreadable otherwise)",
        )
        _retention_argument(sub)
        _common_arguments(sub)
    args = parser.parse_args(argv)
    if args.action == "list":
        defaults = SpeechConfig()
        print(f"{MODEL_NAME}  endpoint={defaults.endpoint_name}  instance={defaults.instance_type}")
        print(f"  stacks: {', '.join(SPEECH_STACKS)}")
        return 0
    context = {
        "kokoro:stacks": "speech",
        "kokoro:instance_type": args.instance_type,
        "kokoro:instance_count": args.instance_count,
        "kokoro:max_instance_count": args.max_instance_count,
        "kokoro:weights_dir": str(args.weights_dir.expanduser()) if args.weights_dir else None,
        "kokoro:network_isolation": "false" if args.no_network_isolation else None,
        "kokoro:tts_run_as_root": "true" if args.tts_run_as_root else None,
        "kokoro:log_retention_days": args.log_retention_days,
    }
    return _guarded(lambda: _run_speech(args, _present(context)))


def agent_main(argv: Sequence[str] | None = None) -> int:
    """Entry of the ``agent-infra`` console script: ``demo``, ``serve`` and the CDK commands."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Delegated commands parse their own flags: everything after the command word is theirs.
    if args_list and args_list[0] in LOCAL_COMMANDS:
        return run_local_command(args_list)
    if args_list and args_list[0] in ACTIONS:
        return agent_infra(args_list)
    parser = agent_parser()
    parser.parse_args(args_list)  # --help, no command or an unknown one: argparse answers and exits
    parser.print_usage(sys.stderr)
    return 2


def agent_parser() -> argparse.ArgumentParser:
    """``agent-infra``'s top level: the commands listed for ``--help`` (each parses its own options)."""
    parser = argparse.ArgumentParser(
        prog="agent-infra", description="The speaking agent: hear it locally, serve its player, deploy it."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help=DEMO_HELP, add_help=False)
    commands.add_parser("serve", help="browser voice player (see `agent-infra serve --help`)", add_help=False)
    for action in ACTIONS:
        commands.add_parser(action, help=f"cdk {action} of the agent stack", add_help=False)
    return parser


def run_local_command(argv: Sequence[str]) -> int:
    """``agent-infra demo|serve ...``: the agent app's launcher, run on this Python as a command line.

    The launchers live with the agent app (:mod:`agentcore_app.local.commands`), and the CDK side reaches
    the other packages only through command lines. Ctrl-C in a terminal reaches the launcher too (one
    process group), which tears its stack down and exits; an interrupt sent to this process alone (a
    supervisor's SIGINT) is passed on after :data:`FORWARD_AFTER_S`. Its exit status is this command's.
    """
    child = subprocess.Popen([sys.executable, "-m", LOCAL_LAUNCHER, *argv])
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            try:
                return child.wait(timeout=FORWARD_AFTER_S)
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGINT)


def agent_infra(argv: Sequence[str]) -> int:
    """``agent-infra deploy|diff|synth|destroy ...``: ``argv`` starts with the command word.

    Each command gets a parser of its own (``prog`` ``agent-infra synth``...), so its ``--help`` and
    its errors name the command, as ``speech-infra synth`` and ``agent-infra demo`` do.
    """
    action, rest = (argv[0], list(argv[1:])) if argv else ("", [])
    if action not in ACTIONS:
        argparse.ArgumentParser(prog="agent-infra").error(
            f"unknown command {action!r} (choose from {', '.join(ACTIONS)})"
        )
    parser = argparse.ArgumentParser(
        prog=f"agent-infra {action}", description=f"cdk {action} of the speaking agent's stacks on AgentCore."
    )
    parser.add_argument(
        "--bedrock-model-id", required=True, help="e.g. us.anthropic.claude-haiku-4-5-20251001-v1:0"
    )
    parser.add_argument(
        "--endpoint-name", default=MODEL_NAME, help=f"the speech endpoint (default {MODEL_NAME})"
    )
    parser.add_argument(
        "--conversation-retention-days",
        type=int,
        metavar="DAYS",
        help="days the conversations bucket keeps a conversation's objects (default 2, at least 2; the app "
        "starts a conversation afresh one day sooner)",
    )
    _retention_argument(parser)
    _common_arguments(parser)
    args = parser.parse_args(rest)
    args.action = action
    context = {
        "kokoro:stacks": "agent",
        "kokoro:bedrock_model_id": args.bedrock_model_id,
        "kokoro:endpoint_name": args.endpoint_name,
        "kokoro:log_retention_days": args.log_retention_days,
        "kokoro:conversation_retention_days": args.conversation_retention_days,
    }
    return _guarded(lambda: _run_agent(args, _present(context)))


def _retention_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-retention-days",
        type=int,
        choices=LOG_RETENTION_DAYS,
        metavar="DAYS",
        help=f"how long CloudWatch keeps the logs (default {DEFAULT_LOG_RETENTION_DAYS}; "
        "a CloudWatch Logs retention period: 1, 3, 5, 7, 14, 30, 60, 90, ... 2557)",
    )


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", help="AWS region (default: the profile's or AWS_REGION)")
    parser.add_argument("--profile", help="AWS named profile")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="cloud assembly directory")


def _run_speech(args: argparse.Namespace, context: dict[str, str]) -> int:
    if args.action == "synth":
        return synth(context, args.output)
    cdk = cdk_command()
    require_credentials(args.profile, args.region)
    config = speech_config(context.get)
    if args.action == "deploy":
        require_docker()
        _fill_weights(config)
    else:  # diff and destroy synthesize the app too, which reads the cache's manifest
        from cdk.stacks.model_cache import read_weights_manifest

        read_weights_manifest(config.weights_dir)
    if args.action == "destroy":
        require_absent(
            cloudformation_status(args.profile, args.region),
            AGENT_STACKS,
            blocking="the speech endpoint",
            fix="destroy the agent first: agent-infra destroy --bedrock-model-id <id>",
        )
    code = run_cdk(cdk, args.action, SPEECH_STACKS, context, args)
    if code == 0 and args.action == "destroy":
        print(SPEECH_LEFT_BEHIND)
    return code


def _run_agent(args: argparse.Namespace, context: dict[str, str]) -> int:
    if args.action == "synth":
        return synth(context, args.output)
    cdk = cdk_command()
    require_credentials(args.profile, args.region)
    if args.action == "deploy":
        require_docker(cross_arm64=True)
        require_deployed(
            cloudformation_status(args.profile, args.region),
            SPEECH_STACKS,
            needed_by="the agent (it speaks through the SageMaker endpoint)",
            fix=f"run `speech-infra deploy {MODEL_NAME}` first",
        )
    code = run_cdk(cdk, args.action, AGENT_STACKS, context, args)
    if code == 0 and args.action == "destroy":
        print(AGENT_LEFT_BEHIND)
    return code


def synth(context: dict[str, str], output: Path) -> int:
    """Synthesize in-process with cdk-nag; print the templates and the verdict."""
    quiet_node(os.environ)  # read by the node that importing the CDK starts
    from cdk.app import build_app  # jsii starts node: import only when synthesizing

    app = build_app(context, outdir=str(output))
    try:
        assembly = app.synth()
    except RuntimeError as exc:
        if "ValidationFailed" in str(exc):
            print(
                f"cdk-nag AwsSolutions found unacknowledged problems: see {output / 'validation-report.json'}"
            )
            return 1
        raise
    for stack in assembly.stacks:
        print(f"{stack.stack_name}: {Path(assembly.directory) / stack.template_file}")
    print("cdk-nag AwsSolutions: 0 unacknowledged findings")
    return 0


def run_cdk(
    cdk: list[str], action: str, stacks: Sequence[str], context: dict[str, str], args: argparse.Namespace
) -> int:
    """Run the CDK CLI against ``python -m cdk.app`` with the same context the in-process synth uses."""
    command = [*cdk, action, *stacks, "--app", f"{sys.executable} -m cdk.app", "--output", str(args.output)]
    for key, value in context.items():
        command += ["--context", f"{key}={value}"]
    if args.profile:
        command += ["--profile", args.profile]
    env = dict(os.environ)
    quiet_node(env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    if args.region:
        env["AWS_REGION"] = env["AWS_DEFAULT_REGION"] = args.region
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, cwd=REPO_ROOT / "cdk", env=env, check=False).returncode


def quiet_node(env: MutableMapping[str, str]) -> None:
    """Add :data:`QUIET_NODE_ENV` to ``env`` (``os.environ`` or a child's), where the user set nothing."""
    for key, value in QUIET_NODE_ENV.items():
        env.setdefault(key, value)


def _fill_weights(config: SpeechConfig) -> None:
    """Fill (idempotent) and re-hash the weight cache the model cache stack uploads.

    GPU instances get the torch checkpoint too; the int8 onnx export is always there for CPU.
    """
    weights = shutil.which("kokoro-weights") or str(Path(sys.executable).with_name("kokoro-weights"))
    if not Path(weights).exists():
        raise ToolingError(
            "`kokoro-weights` is missing: install the container extra (uv sync --extra container)"
        )
    parts = ["--part", "onnx"]
    if config.instance_type.startswith(("ml.g", "ml.p")):
        parts += ["--part", "torch"]
    cache = ["--cache-dir", str(config.weights_dir)]
    for step in ([weights, "fetch", *cache, *parts], [weights, "verify", *cache]):
        if subprocess.run(step, check=False).returncode != 0:
            raise ToolingError(f"weights not ready ({' '.join(step[1:])} failed, see above)")


def _present(context: dict[str, object]) -> dict[str, str]:
    return {key: str(value) for key, value in context.items() if value is not None}


def _guarded(run: Callable[[], int]) -> int:
    """Turn prerequisite and configuration errors into one clear line and exit status 2."""
    try:
        return int(run())
    except (ToolingError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(speech_main())
