"""A connection dropped mid-sentence: KokoroSpeech reopens, re-sends what was not fully spoken, and the
listener hears every sentence exactly once (nothing repeated, nothing skipped).

The drop is real: the REAL WebSocket session's socket is aborted (``transport.abort()``, what a dead
network looks like to the client) right after the first audio frame of the second sentence; the server,
engine and agent are real, the model scripted.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from strands_kokoro import KokoroSpeech, open_session
from strands_kokoro.protocol import AudioData, SynthesizeRequest
from strands_kokoro.sessions.base import SessionEvent
from strands_kokoro.sessions.ws import WebSocketSession
from tests.model_server_process import RunningServer
from tests.scripted_model import ScriptedCall
from tests.strands_kokoro.session_contract import completed, read_until
from tests.strands_kokoro.speech_doubles import make_agent, run_turn, words

# A shared 2-core CI box synthesizes slowly; the first test also waits for the server to load.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

ANSWER = "Sea otters hold hands while they sleep, so they do not drift apart. They wrap themselves in kelp."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class DropOnceWebSocketSession(WebSocketSession):
    """The real WebSocket session; the first one made aborts its socket after the first audio frame of
    the sentence whose request id ends with ``-{sentence}``."""

    cut_at: float | None = None

    def __init__(self, endpoint: str, sentence: int) -> None:
        super().__init__(endpoint)
        self.sentence = sentence

    async def events(self) -> AsyncIterator[SessionEvent]:
        async for event in super().events():
            yield event
            cut_here = isinstance(event, AudioData) and event.request_id.endswith(f"-{self.sentence}")
            if cut_here and DropOnceWebSocketSession.cut_at is None and self._ws is not None:
                DropOnceWebSocketSession.cut_at = time.perf_counter()
                self._ws.transport.abort()


async def clean_synthesis_bytes(server: RunningServer, text: str) -> int:
    """Bytes of one clean synthesis of ``text`` (Kokoro's durations are deterministic)."""
    async with open_session(server.ws_url) as session:
        events = session.events()
        await session.send(SynthesizeRequest(text, request_id="clean", voice="af_heart", speed=1.0))
        got = await read_until(events, completed("clean"))
        await session.close()
    return sum(len(e.pcm) for e in got if isinstance(e, AudioData))


async def test_dropped_connection_resumes_without_repeating_or_skipping(model_server: RunningServer) -> None:
    opened: list[DropOnceWebSocketSession] = []

    def factory() -> DropOnceWebSocketSession:
        opened.append(DropOnceWebSocketSession(model_server.ws_url, sentence=1))
        return opened[-1]

    DropOnceWebSocketSession.cut_at = None
    speech = KokoroSpeech(session_factory=factory, reconnect_backoff_s=0.05)
    agent, _ = make_agent(speech, [ScriptedCall(ANSWER)])
    turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    cut_at = DropOnceWebSocketSession.cut_at
    assert cut_at is not None and len(opened) == 2  # it was cut once, and one reconnect restored it
    assert not turn.of("speech_error") and turn.text() == ANSWER

    completes = turn.of("sentence_complete")
    assert [c["sentence"] for c in completes] == list(range(len(completes)))  # each exactly once
    assert words(" ".join(c["text"] for c in completes)) == words(ANSWER)

    # The cut came after sentence 1's first frame reached the listener. Had the re-sent sentence restarted,
    # that frame would be heard twice; had it been dropped, the rest would be missing. Either way its
    # length would differ from one clean synthesis: nothing twice, nothing skipped.
    audio = turn.audio_by_sentence()
    assert len(audio[1]) == await clean_synthesis_bytes(model_server, completes[1]["text"])
    assert all(audio[c["sentence"]] for c in completes)
