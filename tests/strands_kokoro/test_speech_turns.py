"""Turns that share a KokoroSpeech, and barge-in at awkward moments, with the REAL model server.

- Two turns at once on one ``KokoroSpeech`` (two agents): each turn's events and ``SpokenTurn.result``
  are its own.
- ``interrupt()`` from another thread (an app's audio or UI thread): the turn stops speaking at once and
  the text goes on.
- An interrupt right as the last request completes (just before and just after its completion reaches
  the turn) and one before the session has even opened: the turn ends normally, says nothing it should
  not, reports no error and leaves no task behind.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator

import pytest

from strands_kokoro import KokoroSpeech
from strands_kokoro.events import Event
from strands_kokoro.protocol import SynthesisCompleted, SynthesizeRequest
from strands_kokoro.sessions.base import SessionEvent
from strands_kokoro.sessions.ws import WebSocketSession
from tests.model_server_process import RunningServer
from tests.scripted_model import FOUR_SENTENCES, ScriptedCall
from tests.strands_kokoro.speech_doubles import make_agent, run_turn, words

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

OTTERS = "Otters hold hands while they sleep. They wrap themselves in kelp."
CATS = "Cats purr when they are content. They also nap for most of the day."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def collect(stream: AsyncIterator[Event], arrivals: list[str]) -> list[Event]:
    """The turn's events; ``arrivals`` gets each event's type as it comes (shared by concurrent turns)."""
    events = []
    async with asyncio.timeout(240):
        async for event in stream:
            json.dumps(event)
            events.append(event)
            arrivals.append(event["type"])
    return events


def assert_spoke_exactly(events: list[Event], answer: str) -> None:
    kinds = [e["type"] for e in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert "error" not in kinds and "speech_error" not in kinds and "speech_interrupted" not in kinds
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == answer
    completes = [e for e in events if e["type"] == "sentence_complete"]
    assert [c["sentence"] for c in completes] == list(range(len(completes)))
    assert words(" ".join(c["text"] for c in completes)) == words(answer)
    chunks = [e for e in events if e["type"] == "audio_chunk"]
    assert [c["seq"] for c in chunks] == list(range(len(chunks))) and chunks
    assert events[-1]["chunks"] == len(chunks)


async def test_two_concurrent_turns_on_one_kokoro_speech_keep_their_own_events_and_results(
    model_server: RunningServer,
) -> None:
    speech = KokoroSpeech(endpoint=model_server.ws_url)
    otter_agent, _ = make_agent(speech, [ScriptedCall(OTTERS)])
    cat_agent, _ = make_agent(speech, [ScriptedCall(CATS)])
    before = asyncio.all_tasks()
    arrivals: list[str] = []
    otter_turn = speech.stream(otter_agent, "Tell me about otters.")
    cat_turn = speech.stream(cat_agent, "Tell me about cats.")
    otters, cats = await asyncio.gather(collect(otter_turn, arrivals), collect(cat_turn, arrivals))
    await asyncio.sleep(0)
    assert not [t for t in asyncio.all_tasks() - before if not t.done()]
    # The turns really ran at the same time: both had started (and spoken) before either ended.
    first_end = arrivals.index("agent_end")
    assert arrivals[:first_end].count("agent_start") == 2
    assert_spoke_exactly(otters, OTTERS)
    assert_spoke_exactly(cats, CATS)
    assert otters[0]["request_id"] != cats[0]["request_id"]
    assert str(otter_turn.result).strip() == OTTERS and str(cat_turn.result).strip() == CATS
    assert not speech._active


async def test_interrupt_from_another_thread_stops_the_audio_and_the_text_goes_on(
    model_server: RunningServer,
) -> None:
    heard = threading.Event()
    done = threading.Event()  # the model holds its last token until the other thread has interrupted
    speech = KokoroSpeech(endpoint=model_server.ws_url)
    agent, _ = make_agent(speech, [ScriptedCall(FOUR_SENTENCES)], hold_before_last=done)
    callers: list[int] = []

    def listener_thread() -> None:
        if heard.wait(120):
            callers.append(threading.get_ident())
            speech.interrupt()
        done.set()

    other = threading.Thread(target=listener_thread, name="audio-ui")
    other.start()
    try:
        turn = await run_turn(
            speech.stream(agent, "Tell me about otters."),
            lambda event: heard.set() if event["type"] == "audio_chunk" else None,
        )
    finally:
        heard.set()
        other.join(10)
    assert callers and callers[0] != threading.get_ident()
    assert turn.text() == FOUR_SENTENCES and not turn.of("speech_error") and not turn.of("error")
    [stop] = turn.of("speech_interrupted")
    at = turn.events.index(stop)
    assert turn.first("audio_chunk") < at
    assert not [e for e in turn.events[at:] if e["type"] in ("audio_chunk", "sentence_complete")]
    spoken = words(" ".join(c["text"] for c in turn.of("sentence_complete")))
    assert spoken == words(FOUR_SENTENCES)[: len(spoken)] and len(spoken) < len(words(FOUR_SENTENCES))


class InterruptingSession(WebSocketSession):
    """The real WebSocket session; it calls ``speech.interrupt()`` right before (``"before"``) or right
    after (``"after"``) the turn gets the ``synthesis_complete`` of the request ``last``."""

    def __init__(self, endpoint: str, speech: KokoroSpeech, when: str, last: str) -> None:
        super().__init__(endpoint)
        self.speech = speech
        self.when = when
        self.last = last

    async def events(self) -> AsyncIterator[SessionEvent]:
        async for event in super().events():
            is_last = isinstance(event, SynthesisCompleted) and event.request_id.endswith(self.last)
            if is_last and self.when == "before":
                self.speech.interrupt()
            yield event
            if is_last and self.when == "after":  # the turn has handled it (and closed the session)
                self.speech.interrupt()


@pytest.mark.parametrize("when", ["before", "after"])
async def test_an_interrupt_as_the_last_request_completes_ends_the_turn_cleanly(
    model_server: RunningServer, when: str
) -> None:
    answer = "Otters are back."  # one short sentence: one request, "-0"
    speech = KokoroSpeech(
        session_factory=lambda: InterruptingSession(model_server.ws_url, speech, when, "-0")
    )
    agent, model = make_agent(speech, [ScriptedCall(answer)], tokens_per_s=200)
    turn = await run_turn(speech.stream(agent, "Are they back?"))
    assert model.finished and turn.text() == answer
    assert not turn.of("speech_error") and not turn.of("error")
    assert turn.of("audio_chunk")
    interrupted = turn.of("speech_interrupted")
    if when == "before":
        # The listener barged in before the request finished: it is dropped, never reported complete.
        assert [i["dropped"] for i in interrupted] == [1]
        assert not turn.of("sentence_complete")
        assert turn.last("audio_chunk") < turn.first("speech_interrupted")
    else:
        # Everything was said already: nothing is dropped, the sentence stays complete.
        assert [i["dropped"] for i in interrupted] in ([], [0])
        [complete] = turn.of("sentence_complete")
        assert words(complete["text"]) == words(answer)


class GatedSession(WebSocketSession):
    """The real WebSocket session that opens only once ``gate`` is set, noting what it was asked to send."""

    def __init__(self, endpoint: str, gate: asyncio.Event, sent: list[str]) -> None:
        super().__init__(endpoint)
        self.gate = gate
        self.sent = sent

    async def __aenter__(self) -> GatedSession:
        await asyncio.wait_for(self.gate.wait(), 120)
        await super().__aenter__()
        return self

    async def send(self, request: SynthesizeRequest) -> None:
        self.sent.append(request.text)
        await super().send(request)


async def test_an_interrupt_before_the_session_opens_sends_nothing(model_server: RunningServer) -> None:
    gate = asyncio.Event()
    sent: list[str] = []
    opened: list[GatedSession] = []

    def factory() -> GatedSession:
        opened.append(GatedSession(model_server.ws_url, gate, sent))
        return opened[-1]

    speech = KokoroSpeech(session_factory=factory)
    agent, _ = make_agent(speech, [ScriptedCall(OTTERS)])

    def on_event(event: Event) -> None:
        # The first sentence is written (its request waits for the session), the session is not open.
        if event["type"] == "text_delta" and event["text"].startswith("They") and not gate.is_set():
            speech.interrupt()
            gate.set()

    turn = await run_turn(speech.stream(agent, "Tell me about otters."), on_event)
    assert gate.is_set() and turn.text() == OTTERS
    assert not turn.of("speech_error") and not turn.of("error")
    [stop] = turn.of("speech_interrupted")
    assert turn.events.index(stop) < turn.last("text_delta")  # the text went on after it
    assert not turn.of("audio_chunk") and not turn.of("sentence_complete")
    assert sent == []  # nothing reached the server
    assert turn.events[-1]["first_audio_ms"] is None and turn.events[-1]["chunks"] == 0
