"""``python -m agentcore_app``: serve the AgentCore app locally, exactly as the runtime would.

The defaults pair with a local model server: the agent app on AgentCore's 8080, speech on
``ws://127.0.0.1:8081`` (start it with ``python -m tts_container --port 8081``).

A setting the app cannot use (model, tools, conversations, speech endpoint, a port that is taken) stops
it before it listens, with one line that names the setting and exit status 2. Starting, it says where
it will listen, in one line.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from agentcore_app.agent.models import DEFAULT_MODEL, MODEL_ENV
from agentcore_app.agent.tools import TOOLS_ENV
from agentcore_app.conversation.settings import CONVERSATIONS_ENV
from agentcore_app.errors import SETTING_ERRORS
from kokoro_serving.ports import unusable_port


def main(argv: list[str] | None = None) -> None:
    # The docstring without its reST quotes: argparse shows the description as plain text.
    parser = argparse.ArgumentParser(prog="python -m agentcore_app", description=__doc__.replace("``", ""))
    parser.add_argument(
        "--host", default=None, help="bind address (default: 0.0.0.0 inside a container, else 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8080, help="AgentCore's contract port is 8080")
    parser.add_argument(
        "--speech-endpoint",
        default=None,
        help="ws://host:port, http(s)://host:port or sagemaker:<name> (env STRANDS_KOKORO_SPEECH_ENDPOINT; "
        "default ws://127.0.0.1:8081)",
    )
    parser.add_argument(
        "--model",
        default=None,
        help=f"local | bedrock:<model-id> | openai:<base-url>[#model] (env {MODEL_ENV}; "
        f"default {DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--conversations",
        default=None,
        help=f"where conversations are kept: a directory, s3://<bucket>/<prefix> or off (env "
        f"{CONVERSATIONS_ENV}; default ~/.cache/strands-kokoro/conversations). Tools: env {TOOLS_ENV}",
    )
    args = parser.parse_args(argv)
    try:
        # The module-level app reads the environment when imported, so its errors are caught here too.
        from agentcore_app.agent.models import model_setting
        from agentcore_app.app import create_app, server_settings, speech_endpoint_setting
        from agentcore_app.conversation.settings import ConversationSettings, parse_location

        settings = ConversationSettings.from_env()
        if args.conversations is not None:
            location = parse_location(args.conversations, setting="--conversations")
            settings = dataclasses.replace(settings, location=location)
        app = create_app(speech_endpoint=args.speech_endpoint, model=args.model, conversations=settings)
    except SETTING_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    speech, model = speech_endpoint_setting(args.speech_endpoint), model_setting(args.model)
    host = args.host or default_host()
    if (refused := unusable_port(host, args.port)) is not None:
        print(f"error: {refused}", file=sys.stderr)
        raise SystemExit(2)
    # Said before uvicorn starts (the SDK's run() says nothing at its default log level).
    every_interface = host in ("0.0.0.0", "::")
    where = f" (listening on {host}: every interface, as in a container)" if every_interface else ""
    print(
        f"agent app on http://{'127.0.0.1' if every_interface else host}:{args.port}{where} "
        f"(speech {speech}, model {model})",
        file=sys.stderr,
        flush=True,
    )
    app.run(port=args.port, host=host, **server_settings())


def default_host() -> str:
    """The SDK's own choice when no host is given (``BedrockAgentCoreApp.run``): every interface inside
    a container (``/.dockerenv`` or ``DOCKER_CONTAINER``), else loopback; decided here so the printed
    address is the bound one."""
    in_container = os.path.exists("/.dockerenv") or bool(os.environ.get("DOCKER_CONTAINER"))
    return "0.0.0.0" if in_container else "127.0.0.1"  # nosec B104: a container publishes its port


if __name__ == "__main__":
    main()
