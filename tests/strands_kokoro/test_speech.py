"""KokoroSpeech end to end: a REAL Strands Agent (scripted streaming model) and the REAL model server.

The model is a test double (``ScriptedModel``: known words at 40 tokens/s); the agent loop,
middleware, hooks, tool executor, WebSocket, server and Kokoro engine are all real. Every turn also
checks that it left no asyncio task behind.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any

import pytest
from strands import tool

from benchmarks.speech_check import edit_distance, transcribe
from strands_kokoro import KokoroSpeech
from strands_kokoro.events import Event
from strands_kokoro.protocol import SynthesizeRequest
from strands_kokoro.sessions.ws import WebSocketSession
from tests.model_server_process import RunningServer, free_port
from tests.scripted_model import FOUR_SENTENCES, ScriptedCall, ToolCall, tokens
from tests.strands_kokoro.speech_doubles import Drop, DroppingSessions, Turn, make_agent, run_turn, words

# A shared 2-core CI box synthesizes slowly; the first test also waits for the server to load.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

MAX_WER = 0.1  # Whisper-base on Kokoro's speech (the bar of tests/tts_container/test_asr.py)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def assert_sentences_in_order(turn: Turn) -> None:
    completes = turn.of("sentence_complete")
    assert [c["sentence"] for c in completes] == list(range(len(completes)))
    heard = [e["sentence"] for e in turn.of("audio_chunk")]
    assert heard == sorted(heard), "audio of a later sentence arrived before an earlier one's"
    for c in completes:
        audio_idx = [
            i
            for i, e in enumerate(turn.events)
            if e["type"] == "audio_chunk" and e["sentence"] == c["sentence"]
        ]
        assert audio_idx and max(audio_idx) < turn.events.index(c)
        assert c["audio_ms"] > 0 and c["first_audio_ms"] is not None


# ---------------------------------------------------------------------------------------- bidi / batch


async def test_bidi_speaks_while_the_model_is_still_writing(model_server: RunningServer) -> None:
    first_audio = asyncio.Event()
    speech = KokoroSpeech(endpoint=model_server.ws_url)
    agent, model = make_agent(speech, [ScriptedCall(FOUR_SENTENCES)], hold_before_last=first_audio)

    def on_event(event: Event) -> None:
        if event["type"] == "audio_chunk":
            first_audio.set()

    spoken = speech.stream(agent, "Tell me about otters.")
    turn = await run_turn(spoken, on_event)

    # The model holds its last token until audio arrives (bounded): in bidi it never has to wait long.
    assert model.finished_at is not None
    assert turn.times[turn.first("audio_chunk")] < model.finished_at
    assert turn.first("audio_chunk") < turn.last("text_delta")
    assert turn.text() == FOUR_SENTENCES
    assert [e["seq"] for e in turn.of("text_delta")] == list(range(len(tokens(FOUR_SENTENCES))))
    assert_sentences_in_order(turn)
    completes = turn.of("sentence_complete")
    assert len(completes) >= 4
    assert words(" ".join(c["text"] for c in completes)) == words(FOUR_SENTENCES)  # all said, once
    for c in completes:  # word timings: every word of the request, in order, inside its audio
        assert [w["text"].lower() for w in c["words"]] == words(c["text"])
        assert all(0 <= w["start_ms"] <= w["end_ms"] <= c["audio_ms"] + 1 for w in c["words"])
        # ... and each came earlier in a word_timings event, before the audio_chunk that holds it
        mine = [(i, e) for i, e in enumerate(turn.events) if e.get("sentence") == c["sentence"]]
        timed = [e for _, e in mine if e["type"] == "word_timings"]
        assert [w for t in timed for w in t["words"]] == c["words"]
        assert mine[0][1]["type"] == "word_timings"  # the request's first event: before its audio
    audio = turn.audio_by_sentence()
    assert all(len(pcm) % 2 == 0 and pcm for pcm in audio.values())
    end = turn.events[-1]
    assert end["mode"] == "bidi" and end["chunks"] == len(turn.of("audio_chunk"))
    assert end["first_text_ms"] < end["first_audio_ms"] < end["total_ms"]
    assert abs(end["audio_ms"] - sum(c["audio_ms"] for c in completes)) < 1.0
    assert [e["seq"] for e in turn.of("audio_chunk")] == list(range(end["chunks"]))
    assert not turn.of("speech_error") and not turn.of("error")
    assert spoken.result is not None and str(spoken.result).strip() == FOUR_SENTENCES
    # What a listener of this turn hears (its pieces joined as they came) says the answer.
    pcm = b"".join(base64.b64decode(e["audio"]) for e in turn.of("audio_chunk"))
    heard = transcribe(pcm, turn.of("audio_chunk")[0]["sample_rate"])
    wer = edit_distance(words(FOUR_SENTENCES), words(heard)) / len(words(FOUR_SENTENCES))
    assert wer <= MAX_WER, heard


MARKDOWN_ANSWER = (
    "## Otters\n"
    "Sea otters **hold hands** while they _sleep_ 🦦.\n"
    "- They use `rocks` as tools.\n"
    "```python\n"
    "print('never read aloud')\n"
    "```\n"
    "Read [the guide](https://example.com/otters) for more."
)
MARKUP = ("#", "*", "_", "`", "[", "]", "(", ")", "http", "print", "🦦")


async def test_markdown_and_code_are_spoken_as_the_same_words_in_bidi_and_batch(
    model_server: RunningServer,
) -> None:
    """A real scripted turn in each mode: the text is shown as written, the speech has none of its markup
    (no code, no link target, no emoji) and says the same words either way; batch speaks nothing before
    the whole answer is written."""
    spoken: dict[str, list[str]] = {}
    for mode in ("bidi", "batch"):
        speech = KokoroSpeech(endpoint=model_server.ws_url, mode=mode)
        agent, _ = make_agent(speech, [ScriptedCall(MARKDOWN_ANSWER)], tokens_per_s=100)
        # The user drives stream_async; KokoroSpeech only turns it into events.
        turn = await run_turn(speech.events(agent.stream_async("Tell me about otters.")))
        assert turn.text() == MARKDOWN_ANSWER and turn.events[-1]["mode"] == mode
        assert not turn.of("speech_error") and not turn.of("error")
        texts = [c["text"] for c in turn.of("sentence_complete")]
        assert not [t for t in texts if any(mark in t for mark in MARKUP)], texts
        assert all(c["audio_ms"] > 0 for c in turn.of("sentence_complete"))
        assert_sentences_in_order(turn)
        spoken[mode] = texts
        if mode == "batch":
            # batch: one request for the whole answer, after the last text delta.
            assert len(texts) == 1 and turn.first("audio_chunk") > turn.last("text_delta")
            assert turn.events[-1]["first_audio_ms"] > turn.events[-1]["first_text_ms"]
    assert words(" ".join(spoken["bidi"])) == words(" ".join(spoken["batch"]))
    assert words(" ".join(spoken["bidi"])) == words(
        "Otters Sea otters hold hands while they sleep. They use rocks as tools. Read the guide for more."
    )


class SpySessionDouble(WebSocketSession):
    """The real WebSocket session, noting every text it sent (a test double of the recording kind)."""

    def __init__(self, endpoint: str, sent: list[str]) -> None:
        super().__init__(endpoint)
        self._sent = sent

    async def send(self, request: SynthesizeRequest) -> None:
        await super().send(request)
        self._sent.append(request.text)


WEATHER_BEFORE = "Let me check the weather for you."
WEATHER_AFTER = "It is sunny and warm in Seattle today. Enjoy the sunshine."


def weather_turn(
    model_server: RunningServer, tool_s: float, sent: list[str], **speech_options: Any
) -> tuple[KokoroSpeech, Any, list[list[str]]]:
    """A turn that calls a tool after WEATHER_BEFORE; the tool notes (without waiting) what was sent."""
    sent_when_tool_ran: list[list[str]] = []

    @tool
    async def look_up_weather(city: str) -> str:
        """Look up the weather."""
        sent_when_tool_ran.append(list(sent))
        await asyncio.sleep(tool_s)
        return f"sunny in {city}"

    speech = KokoroSpeech(
        session_factory=lambda: SpySessionDouble(model_server.ws_url, sent), **speech_options
    )
    agent, _ = make_agent(
        speech,
        [
            ScriptedCall(WEATHER_BEFORE, ToolCall("look_up_weather", {"city": "Seattle"})),
            ScriptedCall(WEATHER_AFTER),
        ],
        tools=[look_up_weather],
    )
    return speech, agent, sent_when_tool_ran


async def test_text_before_a_tool_call_is_sent_before_the_tool_runs(model_server: RunningServer) -> None:
    sent: list[str] = []
    speech, agent, sent_when_tool_ran = weather_turn(model_server, 0.0, sent, tool_filler=None)
    turn = await run_turn(speech.stream(agent, "Weather in Seattle?"))
    # The tool saw, at its start and without waiting, all the text before it already on the wire.
    [at_tool] = sent_when_tool_ran
    assert words(" ".join(at_tool)) == words(WEATHER_BEFORE)
    # And its audio comes before the audio of anything written after the tool.
    completes = turn.of("sentence_complete")
    n_before = next(
        k
        for k in range(len(completes) + 1)
        if words(" ".join(c["text"] for c in completes[:k])) == words(WEATHER_BEFORE)
    )
    last_before = max(
        i for i, e in enumerate(turn.events) if e["type"] == "audio_chunk" and e["sentence"] < n_before
    )
    first_after = min(
        i for i, e in enumerate(turn.events) if e["type"] == "audio_chunk" and e["sentence"] >= n_before
    )
    assert last_before < first_after
    assert words(" ".join(c["text"] for c in turn.of("sentence_complete"))) == words(
        WEATHER_BEFORE + " " + WEATHER_AFTER
    )
    assert_sentences_in_order(turn)


async def test_a_slow_tool_gets_a_short_filler_once_the_audio_before_it_has_played(
    model_server: RunningServer,
) -> None:
    sent: list[str] = []
    speech, agent, _ = weather_turn(
        model_server, 6.0, sent, tool_filler="One moment.", tool_filler_after_s=0.5
    )
    turn = await run_turn(speech.stream(agent, "Weather in Seattle?"))
    texts = [c["text"] for c in turn.of("sentence_complete")]
    filler = texts.index("One moment.")  # said once, after the text before the tool, before the rest
    assert texts.count("One moment.") == 1
    flagged = [c["filler"] for c in turn.of("sentence_complete")]
    assert flagged == [index == filler for index in range(len(texts))]  # only the filler is flagged
    assert words(" ".join(texts[:filler])) == words(WEATHER_BEFORE)
    assert words(" ".join(texts[filler + 1 :])) == words(WEATHER_AFTER)
    # It came after the audio before the tool had played out (the listener heard silence, not overlap):
    # a real-time player over the chunks as they arrived, like the pacer's own model of the listener.
    play_end: float | None = None
    for event, at in zip(turn.events, turn.times, strict=True):
        if event["type"] == "audio_chunk" and event["sentence"] == filler:
            break
        if event["type"] == "audio_chunk":
            seconds = len(base64.b64decode(event["audio"])) / 2 / event["sample_rate"]
            play_end = max(play_end or at, at) + seconds
    filler_arrived = next(
        at
        for e, at in zip(turn.events, turn.times, strict=True)
        if e["type"] == "audio_chunk" and e["sentence"] == filler
    )
    assert play_end is not None and filler_arrived >= play_end
    assert_sentences_in_order(turn)


async def test_a_quick_tool_or_no_filler_setting_says_nothing_extra(model_server: RunningServer) -> None:
    for tool_s, filler in ((0.0, "One moment."), (3.0, None)):
        sent: list[str] = []
        speech, agent, _ = weather_turn(model_server, tool_s, sent, tool_filler=filler)
        turn = await run_turn(speech.stream(agent, "Weather in Seattle?"))
        assert words(" ".join(c["text"] for c in turn.of("sentence_complete"))) == words(
            WEATHER_BEFORE + " " + WEATHER_AFTER
        )


# ------------------------------------------------------------------------------------------- failures


async def test_endpoint_down_at_start_text_goes_on() -> None:
    speech = KokoroSpeech(endpoint=f"ws://127.0.0.1:{free_port()}", reconnect_backoff_s=0.05)
    agent, _ = make_agent(speech, [ScriptedCall(FOUR_SENTENCES)])
    turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    assert turn.text() == FOUR_SENTENCES
    [error] = turn.of("speech_error")
    assert error["code"] == "speech_unavailable" and "text goes on" in error["message"]
    assert not turn.of("audio_chunk") and not turn.of("error")
    assert turn.events[-1]["first_audio_ms"] is None


@pytest.mark.parametrize(
    ("endpoint", "code"),
    [
        ("ws://", "bad_endpoint"),
        ("sagemaker:kokoro", "no_region"),
        ("sagemaker:kokoro?region=xx-nowhere-9", "unknown_region"),
    ],
)
async def test_an_endpoint_that_cannot_be_set_up_is_its_own_code_at_once(
    endpoint: str, code: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("strands_kokoro.sessions.sagemaker")
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")  # no region from a profile either
    # Not retried: with this backoff a retry would outlast the test's timeout.
    speech = KokoroSpeech(endpoint=endpoint, reconnect_backoff_s=600.0)
    agent, _ = make_agent(speech, [ScriptedCall("Hello there.")])
    turn = await run_turn(speech.stream(agent, "Hi."))
    [error] = turn.of("speech_error")
    assert error["code"] == code and "text goes on" in error["message"]
    assert turn.text() == "Hello there."


async def test_server_gone_mid_turn_text_goes_on(model_server: RunningServer) -> None:
    """The server goes away mid-turn: its socket dies (aborted, no close frame) as the second request's
    audio begins, and nothing listens any more where the turn reopens (as after a crash)."""
    sessions = DroppingSessions(
        model_server.ws_url, [Drop(request=1, after_bytes=0)], then_endpoint=f"ws://127.0.0.1:{free_port()}"
    )
    speech = KokoroSpeech(session_factory=sessions, reconnect_backoff_s=0.05)
    agent, _ = make_agent(speech, [ScriptedCall(FOUR_SENTENCES)], tokens_per_s=20)
    turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    assert sessions.plan[0].happened and len(sessions.opened) == 1 + speech.options.reconnect_attempts
    assert turn.text() == FOUR_SENTENCES
    [error] = turn.of("speech_error")
    assert error["code"] == "connection_lost"
    assert turn.of("audio_chunk") and not turn.of("error")
    assert turn.first("speech_error") < len(turn.events) - 1  # reported inside the turn, then agent_end
    # The audio stopped at the drop; no sentence after it was completed.
    assert all(turn.events.index(c) < turn.first("speech_error") for c in turn.of("sentence_complete"))


async def test_interrupt_mid_sentence_stops_audio_and_text_goes_on(model_server: RunningServer) -> None:
    interrupted = asyncio.Event()
    speech = KokoroSpeech(endpoint=model_server.ws_url)
    agent, _ = make_agent(speech, [ScriptedCall(FOUR_SENTENCES)], hold_before_last=interrupted)

    def on_event(event: Event) -> None:
        if event["type"] == "audio_chunk" and not interrupted.is_set():
            speech.interrupt()
            interrupted.set()

    turn = await run_turn(speech.stream(agent, "Tell me about otters."), on_event)
    assert turn.text() == FOUR_SENTENCES
    [stop] = turn.of("speech_interrupted")
    at = turn.events.index(stop)
    assert turn.first("audio_chunk") < at
    assert not [e for e in turn.events[at:] if e["type"] in ("audio_chunk", "sentence_complete")]
    assert [e for e in turn.events[at:] if e["type"] == "text_delta"]  # the model kept writing
    # The last sentence was still being written at the interrupt: it (at least) was never spoken.
    spoken = words(" ".join(c["text"] for c in turn.of("sentence_complete")))
    assert spoken == words(FOUR_SENTENCES)[: len(spoken)] and len(spoken) < len(words(FOUR_SENTENCES))
    assert not turn.of("speech_error")


async def test_a_consumer_that_stops_early_leaves_no_task_behind() -> None:
    speech = KokoroSpeech(endpoint=f"ws://127.0.0.1:{free_port()}", reconnect_backoff_s=0.05)
    agent, _ = make_agent(speech, [ScriptedCall(FOUR_SENTENCES)])
    before = asyncio.all_tasks()
    async with contextlib.aclosing(speech.stream(agent, "Tell me about otters.")) as stream:
        async for event in stream:
            if event["type"] == "text_delta":
                break
    await asyncio.sleep(0)
    assert not [t for t in asyncio.all_tasks() - before if not t.done()]
    assert not speech._active  # the turn is over, so interrupt() has nothing to stop


async def test_a_failing_agent_ends_the_turn_with_a_coded_error() -> None:
    speech = KokoroSpeech(endpoint=f"ws://127.0.0.1:{free_port()}", reconnect_attempts=0)
    agent, _ = make_agent(speech, [ScriptedCall("Half an answer.", fail_after_text=True)])
    turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    [error] = turn.of("error")
    assert error["code"] == "agent_failed" and "secret" not in error["message"]
    assert turn.last("error") < len(turn.events) - 1  # agent_end still closes the turn


async def test_an_unknown_voice_is_one_speech_error_and_the_text_goes_on(model_server: RunningServer) -> None:
    """Every request of the turn would be refused alike; a blind fault battery got 9-10 speech_errors per
    turn (one per sentence). Said once, then speech stops and the answer is written in full."""
    speech = KokoroSpeech(endpoint=model_server.ws_url, voice="zz_nobody")
    agent, _ = make_agent(speech, [ScriptedCall(FOUR_SENTENCES * 2)], tokens_per_s=200)
    turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    assert turn.text() == FOUR_SENTENCES * 2
    [error] = turn.of("speech_error")
    assert error["code"] == "unknown_voice" and "text goes on" in error["message"]
    assert not turn.of("audio_chunk") and not turn.of("error")
    assert turn.events[-1]["type"] == "agent_end"


async def test_an_agent_built_with_one_speech_and_spoken_with_another_says_each_word_once(
    model_server: RunningServer,
) -> None:
    """Another voice for one turn: the agent keeps the first KokoroSpeech's tap, the second adds its own;
    only the turn's owner copies the tokens, so no word is written or spoken twice."""
    first = KokoroSpeech(endpoint=model_server.ws_url)
    agent, _ = make_agent(first, [ScriptedCall("Hello there. How are you?")], tokens_per_s=200)
    second = KokoroSpeech(endpoint=model_server.ws_url, voice="bf_emma")
    turn = await run_turn(second.stream(agent, "Say hello."))
    assert turn.text() == "Hello there. How are you?"
    spoken = " ".join(request["text"] for request in turn.of("sentence_complete"))
    assert spoken == "Hello there. How are you?"
    assert turn.of("audio_chunk") and not turn.of("speech_error")
