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
from strands.bidi.types import AudioDelta, BidiMessage
from strands.tools import tool
from strands.types.media import ImageBlock

from agentcore_app.agent.local_llm import LocalSmolLM2Model
from benchmarks.speech_check import word_error_rate, words
from strands_kokoro.listening import KokoroCascade
from tests.listening.spoken_user import (
    EventLog,
    Microphone,
    noise_burst,
    render_user_speech,
    room_tone,
    with_noise,
)
from tests.model_server_process import RunningServer
from tests.scripted_model import ScriptedCall, ScriptedModel, ToolCall

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.timeout(240)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


QUESTION = "What is the capital of France?"
STORY = "Please tell me a long story about a brave little dragon."
HUM = "Mmmmmmmmm."  # a thinking hum: voiced long enough to barge in, and no words
REMEMBER = "My favourite animal is the otter."
RECALL = "Which animal did I say I like?"
SYSTEM = "You are a helpful voice assistant. Answer in a few short sentences."


@pytest.fixture(scope="module")
def spoken(model_server: RunningServer) -> dict[str, bytes]:
    async def render() -> dict[str, bytes]:
        return {
            text: with_noise(await render_user_speech(model_server.ws_url, text))
            for text in (QUESTION, STORY, HUM, REMEMBER, RECALL)
        }

    return asyncio.run(render())


class Conversation(EventLog):
    """A started BidiAgent on the cascade, a live microphone feeding it, and its events as they come."""

    def __init__(self, agent: BidiAgent) -> None:
        super().__init__()
        self.agent = agent
        self.mic = Microphone(self._send)

    async def _send(self, frame: bytes) -> None:
        await self.agent.send(AudioDelta(format="pcm", source={"bytes": frame}))

    async def receive(self) -> None:
        async for event in self.agent.receive():
            self.add(dict(event))


@contextlib.asynccontextmanager
async def conversation(
    model_server: RunningServer, text_model: Any = None, memory: Any = None, **agent_options: Any
) -> AsyncIterator[Conversation]:
    model = KokoroCascade(text_model or LocalSmolLM2Model(), endpoint=model_server.ws_url, memory=memory)
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


async def test_speech_over_the_answer_barges_in_a_noise_burst_does_not_and_history_keeps_what_was_heard(
    model_server: RunningServer, spoken: dict[str, bytes]
) -> None:
    async with conversation(model_server) as talk:
        talk.mic.say(spoken[STORY])
        await talk.until("bidi_audio_delta")
        burst = talk.mic.say(noise_burst(0.2))
        await burst.done.wait()
        after_burst = len(talk.events)
        talk.mic.say(room_tone(1.0))
        question = talk.mic.say(spoken[QUESTION])
        await talk.until("bidi_barge_in")
        at_barge_in = len(talk.events)
        await talk.until("bidi_transcript_block", role="user")
        await talk.until("bidi_response_stop")
    events = talk.events
    types = [e.get("type") for e in events]
    assert types.count("bidi_barge_in") == 1
    # the burst stopped nothing: the story's audio went on after it, up to the question's barge-in
    assert "bidi_audio_delta" in types[after_burst:at_barge_in]
    # the speech that barged in is the question's, not the burst's
    speech_starts = [e["input_ms"] for e in events[:at_barge_in] if e.get("type") == "user_speech"]
    assert speech_starts and speech_starts[-1] >= question.started_s * 1000 - 100
    # no audio of the story after the barge-in: the next audio is the next answer's
    story_stop = types.index("bidi_response_stop", at_barge_in)
    assert "bidi_audio_delta" not in types[at_barge_in:story_stop]
    user_turns = transcripts(talk, "user")
    assert len(user_turns) == 2 and word_error_rate(QUESTION, user_turns[1]) <= 0.15, user_turns
    heard_story, answer = transcripts(talk, "assistant")
    assert heard_story.strip() and answer.strip()
    # the history keeps the story as far as it was heard, then the question and its answer
    said = [(m["role"], m["content"][0].get("text")) for m in talk.agent.messages]
    assert said[:4] == [
        ("user", user_turns[0]),
        ("assistant", heard_story),
        ("user", user_turns[1]),
        ("assistant", answer),
    ]
    cascade = talk.agent.model
    assert isinstance(cascade, KokoroCascade)
    assert cascade.messages[1] == {"role": "assistant", "content": [{"text": heard_story}]}


async def test_a_spoken_turn_calls_a_tool_through_the_bidi_agent(
    model_server: RunningServer, spoken: dict[str, bytes]
) -> None:
    asked: list[str] = []

    @tool
    def capital_of(country: str) -> str:
        """The capital city of a country."""
        asked.append(country)
        return "Paris"

    script = ScriptedModel(
        [
            ScriptedCall("Let me look that up.", tool=ToolCall("capital_of", {"country": "France"})),
            ScriptedCall("The capital of France is Paris."),
        ]
    )
    async with conversation(model_server, script, tools=[capital_of]) as talk:
        talk.mic.say(spoken[QUESTION])
        uses = await talk.until("bidi_tool_use_blocks")
        await talk.until("bidi_response_stop")
    assert asked == ["France"]
    assert [u["name"] for u in uses["tool_uses"]] == ["capital_of"]
    (answer,) = transcripts(talk, "assistant")
    assert "Let me look that up." in answer and "Paris" in answer
    cascade = talk.agent.model
    assert isinstance(cascade, KokoroCascade)
    roles = [(m["role"], next(iter(m["content"][-1]))) for m in cascade.messages]
    assert roles == [
        ("user", "text"),
        ("assistant", "toolUse"),
        ("user", "toolResult"),
        ("assistant", "text"),
    ]
    assert cascade.messages[2]["content"][0]["toolResult"]["content"] == [{"text": "Paris"}]


async def test_bad_input_gets_a_coded_error_and_the_conversation_goes_on(
    model_server: RunningServer, spoken: dict[str, bytes]
) -> None:
    async with conversation(model_server) as talk:
        await talk.agent.send(AudioDelta(format="pcm", source={"bytes": b"\x01\x02\x03"}))
        await talk.agent.send(AudioDelta(format="mp3", source={"bytes": b"ID3"}))
        await talk.agent.model.send(BidiMessage(content=[ImageBlock(format="png", source={"bytes": b"x"})]))
        codes = [(await talk.until("listening_error"))["code"] for _ in range(3)]
        talk.mic.say(spoken[QUESTION])
        user = await talk.until("bidi_transcript_block", role="user")
        await talk.until("bidi_response_stop")
    assert codes == ["not_audio", "unsupported_audio", "unsupported_input"]
    assert word_error_rate(QUESTION, user["transcript"]) <= 0.15
    assert transcripts(talk, "assistant")


class UnreachableMemoryDouble:
    """A conversation memory whose store cannot be reached (a test double)."""

    @contextlib.asynccontextmanager
    async def answering(self) -> AsyncIterator[Any]:
        raise ConnectionError("the store is unreachable")
        yield  # an async generator: entering it raises


async def test_an_unreachable_memory_is_a_coded_error_and_the_answer_goes_on(
    model_server: RunningServer, spoken: dict[str, bytes]
) -> None:
    answer = "Paris is the capital of France."
    async with conversation(model_server, ScriptedModel(answer), UnreachableMemoryDouble()) as talk:
        talk.mic.say(spoken[QUESTION])
        refused = await talk.until("listening_error")
        await talk.until("bidi_response_stop")
    cascade = talk.agent.model
    assert isinstance(cascade, KokoroCascade)
    assert refused["code"] == "memory_unavailable"
    assert transcripts(talk, "assistant") == [answer]
    assert [m["role"] for m in cascade.messages] == ["user", "assistant"]  # the connection's own history


LONG_ANSWER = (
    "Paris is the capital of France. It stands on the river Seine, in the north of the country. "
    "The city is known for its museums, its cafes and its long avenues. "
    "Millions of people visit it every year to see the old churches and the bridges."
)


async def test_a_hum_that_barges_in_holds_no_words_and_the_answer_goes_on_where_the_listener_stopped(
    model_server: RunningServer, spoken: dict[str, bytes]
) -> None:
    async with conversation(model_server, ScriptedModel(LONG_ANSWER)) as talk:
        talk.mic.say(spoken[QUESTION])
        await talk.until("bidi_audio_delta")
        talk.mic.say(room_tone(1.5))  # the listener hears the first words
        talk.mic.say(spoken[HUM])
        await talk.until("bidi_barge_in")
        first_stop = await talk.until("bidi_response_stop")
        resumed = await talk.until("bidi_response_start")
        await talk.until("bidi_response_stop", response_id=resumed["response_id"])
    types = [e.get("type") for e in talk.events]
    assert types.count("bidi_barge_in") == 1 and types.count("bidi_response_start") == 2
    assert first_stop["response_id"] != resumed["response_id"]
    assert len(transcripts(talk, "user")) == 1  # the hum is no turn
    heard, rest = transcripts(talk, "assistant")
    assert heard.strip() and rest.strip(), (heard, rest)
    # the rest starts at the first word the listener did not hear: together they are the whole answer
    assert words(f"{heard} {rest}") == words(LONG_ANSWER), (heard, rest)
    assert words(rest) != words(LONG_ANSWER)
    cascade = talk.agent.model
    assert isinstance(cascade, KokoroCascade)
    assert [m["role"] for m in cascade.messages] == ["user", "assistant"]
    assert words(cascade.messages[1]["content"][0]["text"]) == words(LONG_ANSWER)


class RecordingScriptedModel(ScriptedModel):
    """The scripted model (a test double of the text model) that keeps the messages of every call."""

    def __init__(self, calls: list[ScriptedCall]) -> None:
        super().__init__(calls)
        self.received: list[list[dict[str, Any]]] = []

    def stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.received.append([dict(m) for m in messages])
        return super().stream(messages, *args, **kwargs)


async def test_three_spoken_turns_with_a_tool_are_remembered_and_nothing_is_lost(
    model_server: RunningServer, spoken: dict[str, bytes]
) -> None:
    @tool
    def capital_of(country: str) -> str:
        """The capital city of a country."""
        return "Paris"

    script = RecordingScriptedModel(
        [
            ScriptedCall("I will remember that."),
            ScriptedCall("Let me look that up.", tool=ToolCall("capital_of", {"country": "France"})),
            ScriptedCall("The capital of France is Paris."),
            ScriptedCall("You said the otter."),
        ]
    )
    async with conversation(model_server, script, tools=[capital_of]) as talk:
        for phrase in (REMEMBER, QUESTION, RECALL):
            # the room is quiet for a while first, so the answer before has played: no barge-in
            talk.mic.say(room_tone(3.0) + spoken[phrase])
            await talk.until("bidi_response_stop")
    users = transcripts(talk, "user")
    assert len(users) == 3 and all(u.strip() for u in users), users
    assert word_error_rate(REMEMBER, users[0]) <= 0.3 and word_error_rate(RECALL, users[2]) <= 0.3, users
    assert talk.of("bidi_barge_in") == []
    assert len(talk.of("bidi_tool_use_blocks")) == 1
    # the last call sees the whole conversation: each transcript, the tool's use and its result
    said = " ".join(
        block.get("text", "")
        for message in script.received[-1]
        if message["role"] == "user"
        for block in message["content"]
    )
    assert all(user in said for user in users), (users, said)
    results = [
        block["toolResult"]["content"]
        for message in script.received[-1]
        for block in message["content"]
        if "toolResult" in block
    ]
    assert results == [[{"text": "Paris"}]]
    answers = " ".join(transcripts(talk, "assistant"))
    for line in ("I will remember that.", "The capital of France is Paris.", "You said the otter."):
        assert line in answers
