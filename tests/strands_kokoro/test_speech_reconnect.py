"""A connection cut mid-turn: KokoroSpeech reopens, re-sends what was not fully spoken, says nothing twice.

The cut is made by a TCP proxy in front of the REAL model server (the first connection is aborted after a
set number of audio bytes, later ones pass through); the agent is real, its model scripted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
from conftest import RunningServer
from session_contract import completed, read_until
from speech_doubles import FOUR_SENTENCES, ScriptedCall, make_agent, run_turn, words

from strands_kokoro import KokoroSpeech, open_session
from strands_kokoro.sessions.base import AudioData, SpeechRequest

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CuttingProxy:
    """Forwards TCP to ``target_port``; aborts the FIRST connection after ``cut_after`` bytes downstream."""

    def __init__(self, target_port: int, cut_after: int) -> None:
        self.target_port = target_port
        self.cut_after = cut_after
        self.connections = 0
        self.cut_at: float | None = None
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        first = self.connections == 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        down_bytes = 0

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, downstream: bool) -> None:
            nonlocal down_bytes
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    if downstream and first and self.cut_at is None:
                        down_bytes += len(data)
                        if down_bytes >= self.cut_after:
                            self.cut_at = time.perf_counter()
                            writer.transport.abort()
                            up_writer.transport.abort()
                            return
                    dst.write(data)
                    await dst.drain()
            dst.close()

        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(pipe(reader, up_writer, downstream=False))
            tasks.create_task(pipe(up_reader, writer, downstream=True))


async def fresh_lengths(server: RunningServer, texts: list[str]) -> list[int]:
    """Bytes of a clean synthesis of each text (Kokoro's durations are deterministic)."""
    async with open_session(server.ws_url) as session:
        events = session.events()
        for i, text in enumerate(texts):
            await session.send(SpeechRequest(f"f{i}", text, voice="af_heart", speed=1.0))
        got = await read_until(events, completed(*[f"f{i}" for i in range(len(texts))]))
        await session.close()
    return [
        sum(len(e.pcm) for e in got if isinstance(e, AudioData) and e.request_id == f"f{i}")
        for i in range(len(texts))
    ]


async def test_dropped_connection_resumes_without_repeating_or_skipping(model_server: RunningServer) -> None:
    # ~150 kB downstream: past the first sentence's audio, inside a later one's.
    async with CuttingProxy(model_server.port, cut_after=150_000) as proxy:
        speech = KokoroSpeech(endpoint=f"ws://127.0.0.1:{proxy.port}", reconnect_backoff_s=0.05)
        agent, _ = make_agent(speech, [ScriptedCall(FOUR_SENTENCES)])
        turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    assert proxy.cut_at is not None and proxy.connections >= 2  # it was cut, and it reconnected
    assert not turn.of("speech_error") and turn.text() == FOUR_SENTENCES

    completes = turn.of("sentence_complete")
    assert [c["sentence"] for c in completes] == list(range(len(completes)))  # each exactly once
    assert words(" ".join(c["text"] for c in completes)) == words(FOUR_SENTENCES)

    # Nothing said twice, nothing skipped: each sentence's audio is exactly one clean synthesis long.
    audio = turn.audio_by_sentence()
    expected = await fresh_lengths(model_server, [c["text"] for c in completes])
    assert [len(audio.get(c["sentence"], b"")) for c in completes] == expected

    # Audio kept flowing across the cut: some arrived before it and some after.
    times = [t for e, t in zip(turn.events, turn.times, strict=True) if e["type"] == "audio_chunk"]
    assert min(times) < proxy.cut_at < max(times)
