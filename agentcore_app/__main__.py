"""``python -m agentcore_app``: serve the AgentCore app locally, exactly as the runtime would.

The defaults pair with a local model server: the agent app on AgentCore's 8080, speech on
``ws://127.0.0.1:8081`` (start it with ``python -m tts_container --port 8081``).
"""

from __future__ import annotations

import argparse

from agentcore_app.app import DEFAULT_SPEECH_ENDPOINT, SPEECH_ENDPOINT_ENV, create_app
from agentcore_app.models import DEFAULT_MODEL, MODEL_ENV


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m agentcore_app", description=__doc__)
    parser.add_argument(
        "--host", default=None, help="bind address (default: 0.0.0.0 inside a container, else 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8080, help="AgentCore's contract port is 8080")
    parser.add_argument(
        "--speech-endpoint",
        default=None,
        help=f"ws://host:port, http(s)://host:port or sagemaker:<name> (env {SPEECH_ENDPOINT_ENV}; "
        f"default {DEFAULT_SPEECH_ENDPOINT})",
    )
    parser.add_argument(
        "--model",
        default=None,
        help=f"local | bedrock:<model-id> | openai:<base-url>[#model] (env {MODEL_ENV}; "
        f"default {DEFAULT_MODEL})",
    )
    args = parser.parse_args(argv)
    create_app(speech_endpoint=args.speech_endpoint, model=args.model).run(port=args.port, host=args.host)


if __name__ == "__main__":
    main()
