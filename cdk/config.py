"""Every deploy-time choice in one frozen dataclass, read from CDK context.

Why one place: the stacks, the CLIs and the tests must agree on names (the endpoint name is baked into
IAM resource ARNs of two other stacks), so nothing below is computed twice. Values come from CDK context
(``cdk.json`` or ``-c key=value``) so ``npx aws-cdk deploy`` and the in-process synth read the same keys.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only annotations: importing constructs starts node (jsii), which the CLIs avoid
    from constructs import Construct

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The repository root: the Docker build context of both images (they import ``strands_kokoro`` and
``kokoro_serving``)."""

MODEL_NAME = "kokoro-82m"
"""The only speech model these stacks deploy; the CLI argument and the default endpoint name."""

WEIGHTS_PREFIX = f"{MODEL_NAME}/"
"""Key prefix of the weights inside the bucket: the SageMaker role may read this prefix and nothing else."""

CONTAINER_MODEL_DIR = "/opt/ml/model"
"""Where SageMaker unpacks the S3 prefix inside the container (the SageMaker hosting contract)."""

CONTAINER_PORT = 8080
"""SageMaker and AgentCore both talk to their container on 8080; the Dockerfiles must EXPOSE it."""

BIDI_LABEL = "com.amazonaws.sagemaker.capabilities.bidirectional-streaming"
"""Docker label SageMaker reads to route InvokeEndpointWithBidirectionalStream to the container."""

INFERENCE_PROFILE_PREFIXES = ("us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.")
"""Model ids starting with these are cross-region inference profiles, not foundation models."""

SPEECH_STACKS = ("KokoroSpeechFoundation", "KokoroModelCache", "KokoroSpeechEndpoint")
"""Deployed together by ``speech-infra``, in this order (CDK derives it from the references too)."""

AGENT_STACKS = ("KokoroAgentFoundation", "KokoroAgentRuntime")
"""Deployed by ``agent-infra`` once the speech endpoint exists."""

LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557)
"""The retention periods CloudWatch Logs accepts (``RetentionInDays``); "never expire" is not offered."""

DEFAULT_LOG_RETENTION_DAYS = 30
"""Long enough to debug last month's incident, short enough that logs of every session do not pile up."""

CONVERSATIONS_PREFIX = "conversations/"
"""Key prefix of the remembered conversations in the agent's bucket: the agent's role may use this prefix
and nothing else of the bucket."""

DEFAULT_CONVERSATION_RETENTION_DAYS = 2
"""The bucket's lifecycle rule deletes conversation objects this many days after they were written; the app
treats a conversation as over one day earlier (``STRANDS_KOKORO_CONVERSATION_MAX_AGE_S``), so the rule
never removes part of a conversation still in use."""

_ENDPOINT_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_MODEL_ID = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9.:_-]{2,199}$")
_RUNTIME_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]{0,47}$")
"""AgentCore's runtime name pattern; the name also prefixes the runtime's workload identity."""


def default_weights_dir() -> Path:
    """The cache ``kokoro-weights fetch`` fills (``STRANDS_KOKORO_CACHE`` or ``~/.cache/strands-kokoro``)."""
    configured = os.environ.get("STRANDS_KOKORO_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "strands-kokoro"


class ConfigError(ValueError):
    """A context value that cannot produce a valid deployment (raised before any construct exists)."""


def boolean(raw: object) -> bool:
    """A flag from context: ``true``/``false`` strings from ``-c``/the CLI, real booleans from ``cdk.json``.

    Why not ``bool``: ``bool("false")`` is ``True``.
    """
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"{raw!r} is not true or false")


def _check_retention(days: int) -> None:
    if days not in LOG_RETENTION_DAYS:
        raise ConfigError(
            f"log retention {days} days is not a CloudWatch Logs retention period: "
            f"use one of {', '.join(map(str, LOG_RETENTION_DAYS))}"
        )


@dataclass(frozen=True)
class SpeechConfig:
    """The SageMaker side: endpoint size, autoscaling bounds, alarm thresholds, weight source."""

    endpoint_name: str = MODEL_NAME
    instance_type: str = "ml.g5.xlarge"
    instance_count: int = 1
    max_instance_count: int = 4
    # Share of the measured capacity in use (listeners inside an answer over the listeners the model server
    # admits, averaged over the instances) that autoscaling holds: scale out at this share, before a server
    # refuses at 1.0. Each server measures its own capacity, so the same share fits every instance type;
    # the rest is headroom for the load that grows while a new instance starts (docs/scaling.md).
    target_utilization: float = 0.7
    scale_out_cooldown_s: int = 60
    scale_in_cooldown_s: int = 600
    # p90 of the container's own time to first audio per request (first_audio_ms, see
    # cdk.stacks.observability): one sentence on a g5 is far below this; above it, listeners wait.
    first_audio_alarm_ms: int = 1500
    # Share of invocations answered 4XX (bad requests, overload refusals) that pages someone.
    client_error_alarm_pct: float = 5.0
    # The container needs no network (SageMaker copies the weights in); turn isolation off only if a
    # first deployment shows bidirectional streaming fails with it (docs/deploy.md, first-deployment list).
    network_isolation: bool = True
    # SageMaker's docs say containers are expected to run as root; the image runs as an unprivileged user.
    # If a first deployment shows /opt/ml is unreadable for it, this rebuilds the image to run as root.
    tts_run_as_root: bool = False
    log_retention_days: int = DEFAULT_LOG_RETENTION_DAYS
    weights_dir: Path = field(default_factory=default_weights_dir)

    def __post_init__(self) -> None:
        if not _ENDPOINT_NAME.match(self.endpoint_name):
            raise ConfigError(f"endpoint name {self.endpoint_name!r} is not a valid SageMaker endpoint name")
        if not self.instance_type.startswith("ml."):
            raise ConfigError(
                f"instance type {self.instance_type!r} must be a SageMaker type such as ml.g5.xlarge"
            )
        if not 1 <= self.instance_count <= self.max_instance_count:
            raise ConfigError(
                f"need 1 <= instance count ({self.instance_count}) <= max ({self.max_instance_count})"
            )
        if not 0 < self.target_utilization < 1:
            raise ConfigError(
                f"target utilization {self.target_utilization:g} must be between 0 and 1 (a share of the "
                "measured capacity: at 1 the model server already refuses new answers)"
            )
        if self.first_audio_alarm_ms <= 0:
            raise ConfigError("the first-audio alarm threshold must be positive")
        if not 0 < self.client_error_alarm_pct <= 100:
            raise ConfigError(f"client error alarm {self.client_error_alarm_pct}% must be in (0, 100]")
        _check_retention(self.log_retention_days)


@dataclass(frozen=True)
class AgentConfig:
    """The AgentCore side: which Bedrock model the agent calls, which speech endpoint it speaks through."""

    bedrock_model_id: str
    speech_endpoint_name: str = MODEL_NAME
    runtime_name: str = "strands_kokoro_agent"
    log_retention_days: int = DEFAULT_LOG_RETENTION_DAYS
    conversation_retention_days: int = DEFAULT_CONVERSATION_RETENTION_DAYS

    def __post_init__(self) -> None:
        if not _MODEL_ID.match(self.bedrock_model_id):
            raise ConfigError(f"bedrock model id {self.bedrock_model_id!r} is not a valid model id")
        if not _ENDPOINT_NAME.match(self.speech_endpoint_name):
            raise ConfigError(f"endpoint name {self.speech_endpoint_name!r} is not a valid endpoint name")
        if not _RUNTIME_NAME.match(self.runtime_name):
            raise ConfigError(f"runtime name {self.runtime_name!r} is not a valid AgentCore runtime name")
        _check_retention(self.log_retention_days)
        if self.conversation_retention_days < 2:
            raise ConfigError(
                f"conversation retention {self.conversation_retention_days} days: at least 2 (the app ends a "
                "conversation one day before the bucket deletes it)"
            )

    @property
    def conversation_max_age_s(self) -> int:
        """What the app is told: a conversation older than this starts afresh (a day before deletion)."""
        return (self.conversation_retention_days - 1) * 86_400

    @property
    def is_inference_profile(self) -> bool:
        """Cross-region profiles (``us.anthropic...``) need the profile ARN plus the regional models."""
        return self.bedrock_model_id.startswith(INFERENCE_PROFILE_PREFIXES)

    @property
    def foundation_model_id(self) -> str:
        """The model behind a profile: ``us.anthropic.x`` routes to ``anthropic.x`` in several regions."""
        if self.is_inference_profile:
            return self.bedrock_model_id.split(".", 1)[1]
        return self.bedrock_model_id


def speech_config(get: Callable[[str], Any]) -> SpeechConfig:
    """Build from ``kokoro:<field>`` lookups (strings from ``-c``/the CLI, typed values from ``cdk.json``)."""
    _refuse_retired(get, _RETIRED_SPEECH_FIELDS)
    values = _read_fields(get, _SPEECH_FIELDS)
    if "weights_dir" in values:
        values["weights_dir"] = values["weights_dir"].expanduser()
    return SpeechConfig(**values)


def agent_config(get: Callable[[str], Any]) -> AgentConfig | None:
    """The agent stacks exist only when a Bedrock model id was given (``kokoro:bedrock_model_id``)."""
    model_id = get("kokoro:bedrock_model_id")
    if not model_id:
        return None
    endpoint = get("kokoro:endpoint_name") or MODEL_NAME
    values = _read_fields(get, _AGENT_FIELDS)
    return AgentConfig(bedrock_model_id=str(model_id), speech_endpoint_name=str(endpoint), **values)


def speech_config_from_context(scope: Construct) -> SpeechConfig:
    """:func:`speech_config` over a construct's CDK context."""
    return speech_config(scope.node.try_get_context)


def agent_config_from_context(scope: Construct) -> AgentConfig | None:
    """:func:`agent_config` over a construct's CDK context."""
    return agent_config(scope.node.try_get_context)


def _read_fields(
    get: Callable[[str], Any], fields: tuple[tuple[str, Callable[[Any], Any]], ...]
) -> dict[str, Any]:
    """Typed values of the ``kokoro:<field>`` keys that are set (a value of the wrong type: ConfigError)."""
    values: dict[str, Any] = {}
    for name, kind in fields:
        raw = get(f"kokoro:{name}")
        if raw is None or raw == "":
            continue
        try:
            values[name] = kind(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"context kokoro:{name}={raw!r} is not a {kind.__name__}") from None
    return values


def _refuse_retired(get: Callable[[str], Any], retired: dict[str, str]) -> None:
    """A ``kokoro:<field>`` that no longer exists is an error, not silently ignored: the deployment would
    otherwise differ from what its ``cdk.json`` or command line says."""
    for name, instead in retired.items():
        raw = get(f"kokoro:{name}")
        if raw is not None and raw != "":
            raise ConfigError(f"context kokoro:{name} is no longer read: {instead}")


_RETIRED_SPEECH_FIELDS = {
    "target_concurrency": (
        "autoscaling tracks the share of the measured capacity in use; set kokoro:target_utilization "
        "(0 < x < 1, default 0.7) instead (docs/scaling.md)"
    ),
    "saturation_factor": (
        "the saturation alarm fires when the measured capacity is all in use (utilization >= 1.0, where the "
        "model server refuses new answers); it has no setting (docs/scaling.md)"
    ),
}
"""Settings earlier versions read, and what replaced them."""

_SPEECH_FIELDS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("endpoint_name", str),
    ("instance_type", str),
    ("instance_count", int),
    ("max_instance_count", int),
    ("target_utilization", float),
    ("scale_out_cooldown_s", int),
    ("scale_in_cooldown_s", int),
    ("first_audio_alarm_ms", int),
    ("client_error_alarm_pct", float),
    ("network_isolation", boolean),
    ("tts_run_as_root", boolean),
    ("log_retention_days", int),
    ("weights_dir", Path),
)

_AGENT_FIELDS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("log_retention_days", int),
    ("conversation_retention_days", int),
)
