"""Pick the agent's LLM from one setting (``--model`` / ``STRANDS_KOKORO_MODEL``), so one image runs anywhere.

- ``bedrock:<model-id>``            Strands ``BedrockModel`` (region from the usual AWS settings)
- ``openai:<base-url>[#<model>]``   Strands ``OpenAIModel``; API key from ``OPENAI_API_KEY`` if set
- ``local``                         SmolLM2-135M-Instruct in-process (:mod:`agentcore_app.agent.local_llm`)

Provider modules are imported only when chosen: a Bedrock deployment never loads xllamacpp, and the offline
default never needs boto3 credentials.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agentcore_app.errors import SettingError

if TYPE_CHECKING:
    from strands.models.model import Model

MODEL_ENV = "STRANDS_KOKORO_MODEL"
DEFAULT_MODEL = "local"
# Enough for a 3-6 sentence spoken answer; keeps the remote providers' answers comparable to the local one.
MAX_TOKENS = 400


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model setting."""

    provider: Literal["bedrock", "openai", "local"]
    model_id: str | None = None
    base_url: str | None = None


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``bedrock:<id>``, ``openai:<base-url>[#<model>]`` or ``local``."""
    spec = spec.strip()
    if spec == "local":
        return ModelSpec("local")
    provider, sep, rest = spec.partition(":")
    if sep and provider == "bedrock" and rest:
        return ModelSpec("bedrock", model_id=rest)
    if sep and provider == "openai" and rest:
        base_url, _, model_id = rest.partition("#")
        if not base_url.startswith(("http://", "https://")):
            raise SettingError(f"openai model needs an http(s) base URL, got {base_url!r}")
        return ModelSpec("openai", model_id=model_id or "default", base_url=base_url)
    raise SettingError(
        f"unknown model setting {spec!r}: use 'local', 'bedrock:<model-id>' or 'openai:<base-url>[#<model>]'"
    )


def model_setting(explicit: str | None = None) -> str:
    """The setting in force: an explicit value, else the environment, else the offline default."""
    return explicit or os.environ.get(MODEL_ENV) or DEFAULT_MODEL


def create_model(spec: str | ModelSpec) -> Model:
    """Build the Strands model for ``spec``. Cheap: the local model loads its weights on first use."""
    parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
    if parsed.provider == "bedrock":
        from strands.models.bedrock import BedrockModel

        return BedrockModel(model_id=parsed.model_id or "", max_tokens=MAX_TOKENS)
    if parsed.provider == "openai":
        from strands.models.openai import OpenAIModel

        client_args = {"base_url": parsed.base_url, "api_key": os.environ.get("OPENAI_API_KEY", "unused")}
        return OpenAIModel(
            client_args=client_args, model_id=parsed.model_id or "default", params={"max_tokens": MAX_TOKENS}
        )
    from agentcore_app.agent.local_llm import LocalSmolLM2Model

    return LocalSmolLM2Model()
