"""Model selection from one setting, and the embedded SmolLM2 model streaming for real."""

from __future__ import annotations

import asyncio
import time

import pytest
from strands.models.bedrock import BedrockModel
from strands.models.openai import OpenAIModel

from agentcore_app.local_llm import LocalSmolLM2Model, chat_messages, find_gguf
from agentcore_app.models import ModelSpec, ModelSpecError, create_model, model_setting, parse_model_spec


@pytest.mark.parametrize(
    ("setting", "spec"),
    [
        ("local", ModelSpec("local")),
        ("bedrock:us.amazon.nova-lite-v1:0", ModelSpec("bedrock", model_id="us.amazon.nova-lite-v1:0")),
        (
            "openai:http://127.0.0.1:8000/v1",
            ModelSpec("openai", model_id="default", base_url="http://127.0.0.1:8000/v1"),
        ),
        ("openai:http://h:1/v1#qwen2.5", ModelSpec("openai", model_id="qwen2.5", base_url="http://h:1/v1")),
    ],
)
def test_parse_model_spec(setting: str, spec: ModelSpec) -> None:
    assert parse_model_spec(setting) == spec


@pytest.mark.parametrize("setting", ["", "gpt", "bedrock:", "openai:ftp://x", "ollama:llama3"])
def test_bad_model_setting_says_what_is_valid(setting: str) -> None:
    with pytest.raises(ModelSpecError, match=r"local|http"):
        parse_model_spec(setting)


def test_setting_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRANDS_KOKORO_MODEL", raising=False)
    assert model_setting() == "local"
    monkeypatch.setenv("STRANDS_KOKORO_MODEL", "bedrock:m")
    assert model_setting() == "bedrock:m"
    assert model_setting("local") == "local"


def test_create_model_builds_each_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    bedrock = create_model("bedrock:us.amazon.nova-lite-v1:0")
    assert isinstance(bedrock, BedrockModel)
    assert bedrock.get_config()["model_id"] == "us.amazon.nova-lite-v1:0"
    openai = create_model("openai:http://127.0.0.1:9/v1#tiny")
    assert isinstance(openai, OpenAIModel)
    assert openai.get_config()["model_id"] == "tiny"
    assert isinstance(create_model("local"), LocalSmolLM2Model)


def test_chat_messages_flattens_list_of_parts() -> None:
    messages = [
        {"role": "user", "content": [{"text": "Hello"}, {"text": "there"}]},
        {"role": "assistant", "content": [{"text": "Hi!"}]},
    ]
    assert chat_messages(messages, "Be brief.") == [  # type: ignore[arg-type]
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello\nthere"},
        {"role": "assistant", "content": "Hi!"},
    ]


def test_gguf_is_found_without_importing_the_package() -> None:
    path = find_gguf()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


async def _timed_deltas(
    model: LocalSmolLM2Model, prompt: str, stop_after: int | None = None
) -> list[tuple[float, str]]:
    started = time.perf_counter()
    deltas: list[tuple[float, str]] = []
    stream = model.stream([{"role": "user", "content": [{"text": prompt}]}], system_prompt="Answer briefly.")
    async for event in stream:  # type: ignore[attr-defined]
        if "contentBlockDelta" in event:
            deltas.append((time.perf_counter() - started, event["contentBlockDelta"]["delta"]["text"]))
            if stop_after is not None and len(deltas) >= stop_after:
                await stream.aclose()  # type: ignore[attr-defined]
                break
    return deltas


@pytest.mark.slow
def test_local_model_streams_token_by_token() -> None:
    """Buffered output would arrive all at once at the end; streamed output is spread over the run."""
    model = LocalSmolLM2Model(max_tokens=60)
    asyncio.run(model.load())
    deltas = asyncio.run(_timed_deltas(model, "Name three colours of the rainbow and say why."))
    assert len(deltas) >= 20
    first, last = deltas[0][0], deltas[-1][0]
    # The first token reached the consumer before half of the generation time had passed.
    assert first < last / 2, (first, last)
    assert "".join(text for _, text in deltas).strip()


@pytest.mark.slow
def test_local_model_stops_when_the_consumer_goes_away() -> None:
    """Closing the stream stops sampling (no orphan generation); the next request still works."""
    model = LocalSmolLM2Model(max_tokens=200)
    stopped = asyncio.run(_timed_deltas(model, "Tell me a long story about a fox.", stop_after=3))
    assert len(stopped) == 3
    again = asyncio.run(_timed_deltas(LocalSmolLM2Model(max_tokens=8), "Say hello."))
    assert 1 <= len(again) <= 8
