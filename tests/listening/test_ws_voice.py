"""The agent app's ``/ws`` listens: the user's speech, rendered by the REAL model server in another voice
with noise, streamed in real time as binary frames after ``audio_start``, heard by the library's cascade
in the real app on a real socket; the answer is ``ScriptedModel``'s (a test double with a known text),
spoken by the real server. Everything is asserted from the frames."""

from __future__ import annotations

import asyncio
import contextlib
import json
import wave
from collections.abc import AsyncIterator
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from agentcore_app import event_frames
from agentcore_app.app import create_app
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.local.client import invoke_http
from agentcore_app.local.stack import serve_asgi
from agentcore_app.local.voice_in import read_wav, voice_turns
from agentcore_app.local.ws_client import local_ws_url
from agentcore_app.runtime_session import SESSION_HEADER
from benchmarks.speech_check import word_error_rate
from strands_kokoro.listening import ListeningOptions
from tests.agentcore_app.test_ws_turns import ping_status, wait_turn_over
from tests.listening.spoken_user import EventLog, Microphone, render_user_speech, with_noise
from tests.model_server_process import RunningServer
from tests.scripted_model import FOUR_SENTENCES, ScriptedModel

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.timeout(300)]

QUESTION = "What is the capital of France?"
STORY = "Please tell me a long story about a brave little dragon."
ANSWER = "Paris is the capital of France."
MAX_UTTERANCE_MS = 5_000.0  # the app's limit in this test (30 s by default): the story twice passes it


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def spoken(model_server: RunningServer) -> dict[str, bytes]:
    async def render() -> dict[str, bytes]:
        return {
            text: with_noise(await render_user_speech(model_server.ws_url, text))
            for text in (QUESTION, STORY)
        }

    return asyncio.run(render())


class VoiceSocket(EventLog):
    """A client of ``/ws``: its frames read as events (the framing rules checked), a microphone on it."""

    def __init__(self, ws: ClientConnection) -> None:
        super().__init__()
        self.ws = ws
        self.audio: list[bytes] = []
        self.mic = Microphone(self.ws.send)

    async def read(self) -> None:
        reader = event_frames.FrameReader()
        async for frame in self.ws:
            read = reader.feed(frame)
            if read is None:
                continue
            if read.audio is not None:
                self.audio.append(read.audio)
            self.add(read.event)


@contextlib.asynccontextmanager
async def agent_app(
    model_server: RunningServer, state: Path, answer: str = ANSWER, histories: list[Any] | None = None
) -> AsyncIterator[str]:
    app = create_app(
        speech_endpoint=model_server.ws_url,
        model=lambda: ScriptedModel(answer=answer, histories=histories),
        conversations=ConversationSettings(location=state),
        listening=ListeningOptions(max_utterance_ms=MAX_UTTERANCE_MS),
    )
    async with serve_asgi(app) as url:
        yield url


@contextlib.asynccontextmanager
async def voice_socket(model_server: RunningServer, state: Path) -> AsyncIterator[VoiceSocket]:
    async with agent_app(model_server, state) as url, connect(local_ws_url(url)) as ws:
        client = VoiceSocket(ws)
        async with asyncio.TaskGroup() as tasks:
            reading = tasks.create_task(client.read())
            try:
                yield client
            finally:
                reading.cancel()


def wav_file(pcm: bytes) -> bytes:
    out = BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(pcm)
    return out.getvalue()


async def test_a_spoken_conversation_over_the_socket_with_bad_input_on_the_way(
    model_server: RunningServer, spoken: dict[str, bytes], tmp_path: Path
) -> None:
    async with voice_socket(model_server, tmp_path) as talk:
        # audio with no microphone open; a microphone at another rate; both refused, the socket goes on
        await talk.ws.send(spoken[QUESTION][:3200])
        not_announced = await talk.until("error")
        await talk.ws.send(json.dumps({"type": "audio_start", "sample_rate": 44_100, "request_id": "cd"}))
        wrong_rate = await talk.until("error", request_id="cd")
        await talk.until("turn_end", request_id="cd")
        await talk.ws.send(event_frames.audio_start("mic"))
        await talk.until("listening_start", request_id="mic")
        # bytes that are not 16 kHz s16le: an odd length, a WAV file
        await talk.ws.send(b"\x01\x02\x03")
        await talk.ws.send(wav_file(spoken[QUESTION][:3200]))
        not_audio = [await talk.until("listening_error"), await talk.until("listening_error")]
        async with asyncio.TaskGroup() as tasks:
            mic = tasks.create_task(talk.mic.run())
            talk.mic.say(spoken[QUESTION])
            user = await talk.until("bidi_transcript_block", role="user")
            first_stop = await talk.until("bidi_response_stop")
            # two stories without a pause: longer than the app's utterance limit
            talk.mic.say(spoken[STORY] + spoken[STORY])
            too_long = await talk.until("listening_error", code="utterance_too_long")
            after = await talk.until("bidi_transcript_block", role="user")
            await talk.until("bidi_response_stop")
            mic.cancel()
        await talk.ws.send(event_frames.AUDIO_STOP)
        end = await talk.until("turn_end", request_id="mic")
    assert not_announced["code"] == "audio_not_announced" and not_announced["request_id"] is None
    assert wrong_rate["code"] == "unsupported_audio"
    assert [e["code"] for e in not_audio] == ["not_audio", "not_audio"]
    assert word_error_rate(QUESTION, user["transcript"]) <= 0.15, user["transcript"]
    assert too_long["request_id"] == "mic" and after["transcript"].strip()
    assert end["status"] == "completed"
    answers = [e["transcript"] for e in talk.of("bidi_transcript_block", role="assistant")]
    assert answers[0] == ANSWER and first_stop["request_id"] == "mic"
    chunks = talk.of("audio_chunk")
    assert (
        chunks
        and {c["format"] for c in chunks} == {"pcm_s16le"}
        and {c["sample_rate"] for c in chunks} == {24_000}
    )
    assert sum(len(a) for a in talk.audio) > 24_000 * 2  # over a second of the agent's voice
    assert all(e["request_id"] in ("mic", "cd", None) for e in talk.events)


async def test_the_demo_speaks_wav_files_to_the_app_and_times_the_turns_and_the_barge_in(
    model_server: RunningServer, spoken: dict[str, bytes], tmp_path: Path
) -> None:
    story, question = tmp_path / "story.wav", tmp_path / "question.wav"
    story.write_bytes(wav_file(spoken[STORY]))
    question.write_bytes(wav_file(spoken[QUESTION]))
    files = [(p.name, read_wav(p)) for p in (story, question)]
    async with agent_app(model_server, tmp_path / "state", FOUR_SENTENCES) as url:
        first, second = await voice_turns(url, files, interrupt_after=0.5, voice=None)
    assert word_error_rate(STORY, first.transcript or "") <= 0.15, first.transcript
    assert word_error_rate(QUESTION, second.transcript or "") <= 0.15, second.transcript
    assert not first.interrupting and second.interrupting
    for turn in (first, second):
        stages = [turn.measures[k] for k in ("end_of_turn_ms", "transcript_ms", "answer_audio_ms")]
        assert all(s is not None and s >= 0 for s in stages), turn.measures
        assert turn.measures["voice_to_voice_ms"] == pytest.approx(sum(s for s in stages if s), abs=1)
    assert "barge_in_ms" not in first.measures
    assert (second.measures.get("barge_in_ms") or 0) > 0  # the question stopped the first answer


async def test_a_hang_up_while_the_agent_answers_ends_the_spoken_conversation(
    model_server: RunningServer, spoken: dict[str, bytes], tmp_path: Path
) -> None:
    async with agent_app(model_server, tmp_path / "state", FOUR_SENTENCES) as url:
        async with connect(local_ws_url(url)) as ws:
            talk = VoiceSocket(ws)
            async with asyncio.TaskGroup() as tasks:
                reading = tasks.create_task(talk.read())
                mic = tasks.create_task(talk.mic.run())
                await ws.send(event_frames.audio_start("mic"))
                await talk.until("listening_start")
                talk.mic.say(spoken[QUESTION])
                await talk.until("audio_chunk")
                busy = await ping_status(url)
                mic.cancel()
                reading.cancel()
        # the socket is closed mid-answer: the conversation, its cascade and its speech end with it
        waited = await wait_turn_over(url)
    assert busy == "HealthyBusy" and waited < 30


async def test_a_spoken_conversation_is_its_sessions_conversation_typed_turns_join_it_and_others_remember(
    model_server: RunningServer, spoken: dict[str, bytes], tmp_path: Path
) -> None:
    session = "spoken-conversation-remembered-0123456789"
    histories: list[Any] = []
    async with agent_app(model_server, tmp_path / "state", histories=histories) as url:
        async with connect(f"{local_ws_url(url)}?{SESSION_HEADER}={session}") as ws:
            talk = VoiceSocket(ws)
            async with asyncio.TaskGroup() as tasks:
                reading = tasks.create_task(talk.read())
                mic = tasks.create_task(talk.mic.run())
                await ws.send(event_frames.audio_start("mic"))
                await talk.until("listening_start", request_id="mic")
                talk.mic.say(spoken[QUESTION])
                heard = await talk.until("bidi_transcript_block", role="user")
                await talk.until("bidi_response_stop", request_id="mic")
                # typed with the microphone open: the spoken conversation's next turn, answered in it
                typed = {"type": "turn", "prompt": "And of Germany?", "request_id": "typed"}
                await ws.send(json.dumps(typed))
                joined = await talk.until("turn_end", request_id="typed")
                await talk.until("bidi_response_stop", request_id="mic")
                mic.cancel()
                await ws.send(event_frames.AUDIO_STOP)
                closed = await talk.until("turn_end", request_id="mic")
                reading.cancel()
        # another connection of the same session (SSE): the model reads what was said and typed
        async with httpx.AsyncClient() as http:
            thanks = invoke_http(http, url, {"prompt": "Thanks!"}, session_id=session)
            events = [timed.event async for timed in thanks]
    assert joined["status"] == "joined" and closed["status"] == "completed"
    answers = talk.of("bidi_transcript_block", role="assistant")
    assert [a["transcript"] for a in answers] == [ANSWER, ANSWER]
    assert {a["request_id"] for a in answers} == {"mic"}
    assert any(e["type"] == "audio_chunk" for e in events) and not any(e["type"] == "error" for e in events)
    said = [(m["role"], " ".join(b["text"] for b in m["content"] if "text" in b)) for m in histories[-1]]
    assert said == [
        ("user", heard["transcript"]),
        ("assistant", ANSWER),
        ("user", "And of Germany?"),
        ("assistant", ANSWER),
        ("user", said[-1][1]),
    ]
    assert "Thanks!" in said[-1][1]
