"""Model selection from one setting, and the embedded SmolLM2 model streaming for real."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from strands.models.bedrock import BedrockModel
from strands.models.openai import OpenAIModel

from agentcore_app.agent.local_llm import LocalSmolLM2Model, _LoadedServer, chat_messages, find_gguf
from agentcore_app.agent.models import (
    ModelSpec,
    create_model,
    model_setting,
    parse_model_spec,
)
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.errors import SettingError


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
    with pytest.raises(SettingError, match=r"local|http"):
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


class CountingServer:
    """The real loaded xllamacpp server, counting the chunks it samples and whether it is generating."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sampled = 0
        self.generating = False

    def handle_chat_completions(self, request: dict[str, Any], callback: Callable[[Any], bool]) -> Any:
        def counted(chunk: Any) -> bool:
            self.sampled += 1
            return callback(chunk)

        self.generating = True
        try:
            return self.inner.handle_chat_completions(request, counted)
        finally:
            self.generating = False


@pytest.fixture
def counting_server(monkeypatch: pytest.MonkeyPatch) -> CountingServer:
    """Every LocalSmolLM2Model in the test generates on the real server, through the counter."""
    counting = CountingServer(_LoadedServer.get(None))
    monkeypatch.setattr(_LoadedServer, "get", classmethod(lambda cls, threads: counting))
    return counting


@dataclass
class Delta:
    text: str
    sampled: int  # chunks the server had sampled when this delta reached the consumer
    generating: bool  # whether the server was still generating then


async def _deltas(
    model: LocalSmolLM2Model, counting: CountingServer, prompt: str, stop_after: int | None = None
) -> list[Delta]:
    deltas: list[Delta] = []
    stream = model.stream([{"role": "user", "content": [{"text": prompt}]}], system_prompt="Answer briefly.")
    async for event in stream:  # type: ignore[attr-defined]
        if "contentBlockDelta" in event:
            text = event["contentBlockDelta"]["delta"]["text"]
            deltas.append(Delta(text, counting.sampled, counting.generating))
            if stop_after is not None and len(deltas) >= stop_after:
                await stream.aclose()  # type: ignore[attr-defined]
                break
    return deltas


@pytest.mark.slow
def test_local_model_streams_token_by_token(counting_server: CountingServer) -> None:
    """Buffered output would reach the consumer only once generation is over; streamed output while
    the model is still sampling (event order, not a clock)."""
    model = LocalSmolLM2Model(max_tokens=60)
    deltas = asyncio.run(_deltas(model, counting_server, "Name three colours of the rainbow and say why."))
    assert len(deltas) >= 20
    first = deltas[0]
    assert first.generating, "the first token reached the consumer only after generation ended"
    assert first.sampled < counting_server.sampled / 2, (first.sampled, counting_server.sampled)
    assert "".join(d.text for d in deltas).strip()


@pytest.mark.slow
def test_local_model_stops_when_the_consumer_goes_away(counting_server: CountingServer) -> None:
    """Closing the stream stops sampling (no orphan generation); the next request still works."""
    model = LocalSmolLM2Model(max_tokens=200)
    stopped = asyncio.run(_deltas(model, counting_server, "Tell me a long story about a fox.", stop_after=3))
    assert len(stopped) == 3
    # aclose() returned only once the server's generation had ended, a few tokens after the third,
    # far short of the 200 it was allowed (a story that long does not end by itself).
    assert not counting_server.generating
    assert counting_server.sampled <= 3 + 5, counting_server.sampled
    counting_server.sampled = 0
    again = asyncio.run(_deltas(LocalSmolLM2Model(max_tokens=8), counting_server, "Say hello."))
    assert 1 <= len(again) <= 8 and counting_server.sampled >= len(again)


@pytest.mark.slow
def test_the_app_reads_the_system_prompt_while_it_starts(counting_server: CountingServer) -> None:
    """With the embedded model, the app's start-up loads it and reads the system prompt once (one token
    sampled, no more), so a caller's first turn does not pay for either; a remote model is not called."""
    from starlette.testclient import TestClient

    from agentcore_app.app import SYSTEM_PROMPT, create_app

    requests: list[dict[str, Any]] = []
    recorded = counting_server.handle_chat_completions

    def recording(request: dict[str, Any], callback: Callable[[Any], bool]) -> Any:
        requests.append(request)
        return recorded(request, callback)

    counting_server.handle_chat_completions = recording  # type: ignore[method-assign]
    app = create_app(
        model="local", speech_endpoint="ws://127.0.0.1:9", conversations=ConversationSettings(None)
    )
    with TestClient(app) as client:
        for _ in range(600):  # the warm-up runs beside the server; wait for it, not for a clock
            if requests and not counting_server.generating:
                break
            time.sleep(0.05)
        assert client.get("/ping").status_code == 200
    (warm_up,) = requests
    assert warm_up["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert 1 <= counting_server.sampled <= 3
    requests.clear()
    remote = create_app(
        model="openai:http://127.0.0.1:9/v1",
        speech_endpoint="ws://127.0.0.1:9",
        conversations=ConversationSettings(None),
    )
    with TestClient(remote):
        pass
    assert requests == []


async def _prompt_usage(model: Any, prompt: str, system_prompt: str) -> dict[str, int]:
    """The usage the model reports for one request (llama.cpp's own count of the tokens it read)."""
    usage: dict[str, int] = {}
    async for event in model.stream(
        [{"role": "user", "content": [{"text": prompt}]}], system_prompt=system_prompt
    ):
        if "metadata" in event:
            usage = dict(event["metadata"]["usage"])
    return usage


@pytest.mark.slow
def test_the_demo_model_finds_only_the_system_prompt_read() -> None:
    """The demo's model (as ``agent-infra demo --local --llm-pace`` builds it) starts every request with
    the system prompt in llama.cpp's cache and reads the user's part fresh, even when the same prompt
    was read just before; the default model reuses all it shares with the prompt before."""
    from agentcore_app.app import SYSTEM_PROMPT
    from agentcore_app.local.commands import compared_model

    factory = compared_model("local", 1000.0)
    assert factory is not None

    async def requests() -> list[dict[str, int]]:
        asked = ["Why is the sky blue?", "Why is the sky blue?", "How do volcanoes form, in short?"]
        usages = []
        for prompt in asked:
            model = factory()
            model.update_config(max_tokens=4)  # the prompt is what is counted: a short answer will do
            usages.append(await _prompt_usage(model, prompt, SYSTEM_PROMPT))
        return usages

    first, again, other = asyncio.run(requests())
    system_part = first["cacheReadInputTokens"]
    assert system_part > 20  # the system prompt, rendered by the chat template
    for usage in (first, again, other):
        assert usage["cacheReadInputTokens"] == system_part, usage
        assert usage["inputTokens"] - system_part >= 8, usage  # the user's part, read for this request
    assert again["inputTokens"] == first["inputTokens"]

    def default_model() -> LocalSmolLM2Model:
        return LocalSmolLM2Model(max_tokens=4)

    async def repeated() -> dict[str, int]:
        await _prompt_usage(default_model(), "Why is the sky blue?", SYSTEM_PROMPT)
        return await _prompt_usage(default_model(), "Why is the sky blue?", SYSTEM_PROMPT)

    cached = asyncio.run(repeated())
    assert cached["inputTokens"] == first["inputTokens"]
    assert cached["cacheReadInputTokens"] >= cached["inputTokens"] - 1, cached  # llama.cpp reads one again
