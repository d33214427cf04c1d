"""The cascade with real audio: the user's speech rendered by the REAL model server in another voice, with
noise, fed as a microphone to ``BidiAgent(model=KokoroCascade(...))`` that answers with the embedded
SmolLM2 and speaks through the same server. Transcript, answer and barge-in are read from the events."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from strands.bidi import BidiAgent
from strands.bidi.types import AudioDelta

from agentcore_app.agent.local_llm import LocalSmolLM2Model
from benchmarks.speech_check import word_error_rate
from strands_kokoro.listening import KokoroCascade
from tests.listening.spoken_user import Microphone, render_user_speech, with_noise
from tests.model_server_process import RunningServer

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.timeout(240)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


QUESTION = "What is the capital of France?"
STORY = "Please tell me a long story about a brave little dragon."
SYSTEM = "You are a helpful voice assistant. Answer in a few short sentences."


@pytest.fixture(scope="module")
def spoken(model_server: RunningServer) -> dict[str, bytes]:
    async def render() -> dict[str, bytes]:
        return {
            text: with_noise(await render_user_speech(model_server.ws_url, text))
            for text in (QUESTION, STORY)
        }

    return asyncio.run(render())


class Conversation:
    """A started BidiAgent on the cascade, a live microphone feeding it, and its events as they come."""

    def __init__(self, agent: BidiAgent) -> None:
        self.agent = agent
        self.events: list[dict[str, Any]] = []
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.mic = Microphone(self._send)

    async def _send(self, frame: bytes) -> None:
        await self.agent.send(AudioDelta(format="pcm", source={"bytes": frame}))

    async def receive(self) -> None:
        async for event in self.agent.receive():
            self.events.append(dict(event))
            self._queue.put_nowait(dict(event))

    async def until(self, kind: str, **fields: Any) -> dict[str, Any]:
        while True:
            event = await self._queue.get()
            if event["type"] == kind and all(event.get(k) == v for k, v in fields.items()):
                return event

    def of(self, kind: str, **fields: Any) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind and all(e.get(k) == v for k, v in fields.items())]


@contextlib.asynccontextmanager
async def conversation(model_server: RunningServer, **agent_options: Any) -> AsyncIterator[Conversation]:
    model = KokoroCascade(LocalSmolLM2Model(), endpoint=model_server.ws_url)
    agent = BidiAgent(model=model, system_prompt=SYSTEM, **agent_options)
    await agent.start()
    talk = Conversation(agent)
    try:
        async with asyncio.TaskGroup() as tasks:
            mic = tasks.create_task(talk.mic.run())
            receiver = tasks.create_task(talk.receive())
            try:
                yield talk
            finally:
                mic.cancel()
                receiver.cancel()
    finally:
        await agent.stop()


def transcripts(talk: Conversation, role: str) -> list[str]:
    return [e["transcript"] for e in talk.of("bidi_transcript_block", role=role)]


async def test_a_spoken_question_is_transcribed_answered_and_spoken(
    model_server: RunningServer, spoken: dict[str, bytes]
) -> None:
    async with conversation(model_server) as talk:
        talk.mic.say(spoken[QUESTION])
        user = await talk.until("bidi_transcript_block", role="user")
        assert word_error_rate(QUESTION, user["transcript"]) <= 0.15, user["transcript"]
        stop = await talk.until("bidi_response_stop")
        answer = transcripts(talk, "assistant")
        audio = b"".join(base64.b64decode(e["audio"]) for e in talk.of("bidi_audio_delta"))
    assert answer and answer[0].strip(), talk.events
    assert len(audio) > 24_000 * 2  # over a second of voice
    assert {e["response_id"] for e in talk.of("bidi_response_start")} == {stop["response_id"]}
    assert not talk.of("bidi_barge_in")
    history = talk.agent.messages
    assert history[0]["role"] == "user" and history[0]["content"][0]["text"] == user["transcript"]
    assert any(m["role"] == "assistant" and m["content"][0].get("text") == answer[0] for m in history)
