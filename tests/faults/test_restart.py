"""The model server is killed (SIGKILL) and restarted on the same port in the middle of a spoken turn.

The text answer completes; speech resumes once the new server is up; and the listener hears every
sentence exactly once: each request's received PCM equals, byte for byte, an uninterrupted synthesis of
the same text on the same (restarted) server (Kokoro is deterministic), so a repeated stretch or a gap at
the seam would show. The reconnect rule this checks is :mod:`strands_kokoro.turn.speech_turn`'s: a request
cut mid-audio is re-sent whole and the audio already heard is dropped from the new stream. While the new
server loads its model it answers ``not_ready`` (then closes 1013): a reason to retry, so the turn
reports no ``speech_error`` at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from strands_kokoro import KokoroSpeech, open_session
from strands_kokoro.events import Event
from strands_kokoro.protocol import AudioData, SynthesizeRequest
from strands_kokoro.sessions.base import SpeechSession
from tests.faults.restartable_server import RestartableServer, restartable_server
from tests.scripted_model import ScriptedCall
from tests.strands_kokoro.session_contract import completed, read_until
from tests.strands_kokoro.speech_doubles import make_agent, run_turn, words

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(600)]

ANSWER = (
    "Otters sleep holding hands. They wrap themselves in kelp to stay in place. "
    "Their fur is the densest of any animal."
)


@pytest.fixture
def server() -> Iterator[RestartableServer]:
    running = restartable_server()
    try:
        yield running
    finally:
        running.stop()


async def uninterrupted_pcm(server: RestartableServer, text: str) -> bytes:
    async with open_session(server.ws_url) as session:
        events = session.events()
        await session.send(SynthesizeRequest(text, request_id="clean"))
        got = await read_until(events, completed("clean"))
        await session.close()
    return b"".join(e.pcm for e in got if isinstance(e, AudioData))


async def test_server_killed_and_restarted_mid_turn_resumes_without_repeating_or_skipping(
    server: RestartableServer,
) -> None:
    opened: list[SpeechSession] = []

    def factory() -> SpeechSession:
        opened.append(open_session(server.ws_url))
        return opened[-1]

    killed_at: list[int] = []

    def on_event(event: Event) -> None:
        # Mid-request: the first audio of the second request has reached the listener.
        if event["type"] == "audio_chunk" and event["sentence"] == 1 and not killed_at:
            killed_at.append(len(opened))
            server.kill()
            server.start()  # same port; it answers once the model is loaded again

    # Enough retries to outlast a model load on a busy 2-core machine (0.25 s doubling: ~4 min in all).
    speech = KokoroSpeech(session_factory=factory, reconnect_attempts=10, reconnect_backoff_s=0.25)
    agent, _ = make_agent(speech, [ScriptedCall(ANSWER)], tokens_per_s=30)
    turn = await run_turn(speech.stream(agent, "Tell me about otters."), on_event)
    await asyncio.to_thread(server.wait_ready)

    assert killed_at and server.starts == 2 and len(opened) > killed_at[0]  # it reconnected
    assert turn.text() == ANSWER and not turn.of("error")
    assert not turn.of("speech_error")  # a restart is a drop to recover from, not a failure to report
    completes = turn.of("sentence_complete")
    assert [c["sentence"] for c in completes] == list(range(len(completes)))  # each once, in order
    assert words(" ".join(c["text"] for c in completes)) == words(ANSWER)  # nothing skipped
    assert max(c["sentence"] for c in completes) >= 2  # speech went on after the restart
    audio = turn.audio_by_sentence()
    for complete in completes:
        clean = await uninterrupted_pcm(server, complete["text"])
        heard = audio[complete["sentence"]]
        assert heard == clean, (complete["sentence"], len(heard), len(clean))
