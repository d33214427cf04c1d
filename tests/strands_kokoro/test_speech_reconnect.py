"""A connection dropped mid-turn: KokoroSpeech reopens, re-sends what was not fully spoken, and the
listener hears every request's audio exactly once: byte for byte what an uninterrupted synthesis of the
same text gives (Kokoro is deterministic), so a stretch heard twice or a gap at a seam would show.

The drops are real: the REAL WebSocket session's socket is aborted (``transport.abort()``, what a dead
network looks like to the client), or SageMaker's router (the stand-in, behind the REAL HTTP/2 SDK)
breaks the stream with a ``ModelStreamError``; the server, engine and agent are real, the model scripted.

- A cut in the middle of a frame: the listener got part of a frame, so the re-sent request's audio must
  be trimmed inside a frame (the partial branch of the request ledger's fresh-audio rule).
- A drop during the re-send: the second connection drops while it is still passing over audio the
  listener already had. So one turn has two drops and three connections.
- A whole turn over SageMaker bidi (every frame split into three payload parts), broken mid-frame once.

The server-restart case (a SIGKILLed process and its successor on the same port) is
``tests/faults/test_restart.py``.
"""

from __future__ import annotations

import json

import pytest

from strands_kokoro import KokoroSpeech, open_session
from strands_kokoro.protocol import AudioData, SynthesizeRequest
from tests.model_server_process import RunningServer
from tests.scripted_model import ScriptedCall
from tests.strands_kokoro.session_contract import completed, read_until
from tests.strands_kokoro.speech_doubles import (
    AGENT_END_FIELDS,
    Drop,
    DroppingSessions,
    Turn,
    make_agent,
    run_turn,
    words,
)
from tests.strands_kokoro.standins.sagemaker_bidi_router import SageMakerBidiRouter
from tests.strands_kokoro.test_sessions_sagemaker import open_bidi

# A shared 2-core CI box synthesizes slowly; the first test also waits for the server to load.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

ANSWER = "Sea otters hold hands while they sleep, so they do not drift apart. They wrap themselves in kelp."
FRAME_BYTES = 32 * 1024  # the server's audio frames (tts_container.synthesis.stitching.MAX_FRAME_BYTES)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def clean_frames(server: RunningServer, texts: list[str]) -> list[list[bytes]]:
    """The audio frames of one uninterrupted synthesis of each text, as the server sends them."""
    frames: list[list[bytes]] = []
    async with open_session(server.ws_url) as session:
        events = session.events()
        for i, text in enumerate(texts):
            await session.send(SynthesizeRequest(text, request_id=f"clean-{i}"))
            got = await read_until(events, completed(f"clean-{i}"))
            frames.append([e.pcm for e in got if isinstance(e, AudioData)])
        await session.close()
    return frames


def assert_every_request_heard_once_as_synthesized(turn: Turn, clean: list[list[bytes]]) -> None:
    assert not turn.of("speech_error") and not turn.of("error"), turn.of("speech_error")
    assert turn.text() == ANSWER
    completes = turn.of("sentence_complete")
    assert [c["sentence"] for c in completes] == list(range(len(completes)))  # each once, in order
    assert words(" ".join(c["text"] for c in completes)) == words(ANSWER)  # nothing skipped
    heard = turn.audio_by_sentence()
    for complete, frames in zip(completes, clean, strict=True):
        got, expected = heard[complete["sentence"]], b"".join(frames)
        assert got == expected, (complete["sentence"], len(got), len(expected))
        # the words were timed once each too, although the server timed a re-sent request's words again
        timed = [e for e in turn.of("word_timings") if e["sentence"] == complete["sentence"]]
        assert [w for e in timed for w in e["words"]] == complete["words"] != []
    assert set(turn.events[-1]) == AGENT_END_FIELDS


async def test_a_cut_inside_a_frame_then_a_drop_during_the_resend_lose_and_repeat_nothing(
    model_server: RunningServer,
) -> None:
    cut_inside = FRAME_BYTES + 10_000  # the listener has more than a frame's worth of request 1
    resend_cut = FRAME_BYTES  # the re-sent request drops while it passes over audio already heard
    sessions = DroppingSessions(
        model_server.ws_url,
        [Drop(request=1, after_bytes=cut_inside), Drop(request=1, after_bytes=resend_cut)],
    )
    speech = KokoroSpeech(session_factory=sessions, reconnect_backoff_s=0.05)
    agent, _ = make_agent(speech, [ScriptedCall(ANSWER)])
    turn = await run_turn(speech.stream(agent, "Tell me about otters."))

    # Two drops, three connections: both drops happened where planned.
    assert len(sessions.opened) == 3 and all(drop.happened for drop in sessions.plan)
    clean = await clean_frames(model_server, [c["text"] for c in turn.of("sentence_complete")])
    # The first cut really was inside a frame of request 1, so the resumed audio had to be trimmed inside
    # one. The second drop came while the re-sent request was still passing over audio the listener had
    # (its cut lies before the first one's), so the third connection resumes at the first cut again.
    boundaries = {sum(len(f) for f in clean[1][:k]) for k in range(len(clean[1]) + 1)}
    assert cut_inside not in boundaries and cut_inside < max(boundaries), sorted(boundaries)
    assert 0 < resend_cut < cut_inside
    assert_every_request_heard_once_as_synthesized(turn, clean)


async def test_a_whole_turn_over_sagemaker_bidi_survives_a_stream_broken_mid_frame(
    model_server: RunningServer,
) -> None:
    """KokoroSpeech over the SageMaker bidi stand-in (frames in three parts), broken once in the middle
    of request 1's second audio frame: reopened through a second router, nothing heard twice or lost."""
    current: dict[str, object] = {"request": None, "audio": 0}

    def second_audio_frame_of_request_1(frame: str | bytes) -> bool:
        if isinstance(frame, str):
            control = json.loads(frame)
            if control.get("type") == "synthesis_start":
                current.update(request=control["request_id"], audio=0)
            return False
        if not str(current["request"]).endswith("-1"):
            return False
        current["audio"] = int(str(current["audio"])) + 1
        return current["audio"] == 2

    async with (
        SageMakerBidiRouter(
            model_server.ws_url, split_into=3, break_when=second_audio_frame_of_request_1
        ) as breaking,
        SageMakerBidiRouter(model_server.ws_url, split_into=3) as steady,
    ):
        routers = iter([breaking, steady])
        speech = KokoroSpeech(session_factory=lambda: open_bidi(next(routers)), reconnect_backoff_s=0.05)
        agent, _ = make_agent(speech, [ScriptedCall(ANSWER)])
        turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    assert breaking.log.streams_broken == 1 and breaking.log.partial_parts > 0
    assert steady.log.streams_broken == 0 and steady.log.endpoint_names == ["kokoro-standin"]
    clean = await clean_frames(model_server, [c["text"] for c in turn.of("sentence_complete")])
    assert_every_request_heard_once_as_synthesized(turn, clean)
    assert turn.events[-1]["mode"] == "bidi" and turn.events[-1]["chunks"] == len(turn.of("audio_chunk"))
