"""The CDK app: ``python -m cdk.app`` (what ``cdk.json`` and the CLIs run) or :func:`build_app` in-process.

Which stacks exist is chosen by context so each CLI synthesizes only what it deploys:
``kokoro:stacks`` = ``speech`` | ``agent`` | ``all`` (default ``all``; ``agent`` needs
``kokoro:bedrock_model_id``). The agent stacks never reference the speech stacks' resources: they name
the endpoint, so the speech stack stays deletable and each side deploys on its own (the CLI checks the
order instead of a CloudFormation export, which would lock the endpoint stack).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import App, Stack, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from cdk.config import (
    AGENT_STACKS,
    SPEECH_STACKS,
    ConfigError,
    agent_config_from_context,
    speech_config_from_context,
)
from cdk.stacks.agent_foundation import AgentFoundationStack
from cdk.stacks.agent_runtime import AgentRuntimeStack
from cdk.stacks.model_cache import ModelCacheStack
from cdk.stacks.speech_endpoint import SpeechEndpointStack
from cdk.stacks.speech_foundation import SpeechFoundationStack

CDK_JSON = Path(__file__).with_name("cdk.json")


def build_app(
    context: Mapping[str, Any] | None = None,
    *,
    outdir: str | None = None,
    nag: bool = True,
    app: App | None = None,
) -> App:
    """Create the app with its stacks; cdk-nag's AwsSolutions pack runs on synth unless ``nag=False``."""
    app = app or App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    group = str(app.node.try_get_context("kokoro:stacks") or "all")
    if group not in ("speech", "agent", "all"):
        raise ConfigError(f"context kokoro:stacks={group!r}: expected speech, agent or all")
    stacks: list[Stack] = []
    if group in ("speech", "all"):
        stacks += add_speech_stacks(app)
    if group in ("agent", "all"):
        agent = add_agent_stacks(app)
        if not agent and group == "agent":
            raise ConfigError("the agent stacks need a Bedrock model: -c kokoro:bedrock_model_id=<id>")
        stacks += agent
    for stack in stacks:
        Tags.of(stack).add("project", "strands-kokoro")
    if nag:
        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


def cdk_json_context() -> dict[str, Any]:
    """``cdk/cdk.json``'s context, so the in-process synth uses the feature flags the CDK CLI uses.

    Under the CDK CLI this is redundant but harmless: context the CLI passes takes precedence.
    """
    return dict(json.loads(CDK_JSON.read_text(encoding="utf-8")).get("context", {}))


def add_speech_stacks(app: App) -> list[Stack]:
    """Foundation, then the weights upload, then the endpoint that serves them."""
    config = speech_config_from_context(app)
    foundation_id, cache_id, endpoint_id = SPEECH_STACKS
    foundation = SpeechFoundationStack(
        app, foundation_id, config=config, description="strands-kokoro: weights bucket and speech roles"
    )
    cache = ModelCacheStack(
        app,
        cache_id,
        config=config,
        description="strands-kokoro: pinned Kokoro-82M weights copied into the weights bucket",
    )
    endpoint = SpeechEndpointStack(
        app,
        endpoint_id,
        config=config,
        execution_role=foundation.execution_role,
        model_data_uri=cache.model_data_uri,
        description="strands-kokoro: Kokoro-82M SageMaker endpoint with bidirectional streaming",
    )
    cache.add_stack_dependency(foundation, "the cache imports the weights bucket by export name")
    endpoint.add_stack_dependency(cache, "the endpoint loads the weights the cache stack uploads")
    return [foundation, cache, endpoint]


def add_agent_stacks(app: App) -> list[Stack]:
    """The execution role (and conversations bucket), then the runtime that uses them (empty without a
    Bedrock model id)."""
    config = agent_config_from_context(app)
    if config is None:
        return []
    foundation_id, runtime_id = AGENT_STACKS
    foundation = AgentFoundationStack(
        app, foundation_id, config=config, description="strands-kokoro: AgentCore execution role"
    )
    runtime = AgentRuntimeStack(
        app,
        runtime_id,
        config=config,
        execution_role=foundation.execution_role,
        conversations_bucket_name=foundation.conversations.bucket_name,
        description="strands-kokoro: speaking Strands agent on Bedrock AgentCore",
    )
    return [foundation, runtime]


def main() -> None:
    """Entry of ``python -m cdk.app``: the CDK CLI passes context and the output dir by environment."""
    build_app().synth()


if __name__ == "__main__":
    main()
