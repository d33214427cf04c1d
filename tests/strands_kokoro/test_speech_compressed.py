"""A turn spoken in Opus or MP3 (``KokoroSpeech(audio_format=...)``) with the REAL model server.

The turn's ``audio_chunk`` events, joined in ``seq`` order, are ONE stream (one Ogg Opus or MP3 per turn,
not per sentence): it decodes to the audio the turn says it spoke (``agent_end.audio_ms``, counted on the
PCM), the first chunk opens the stream and the last one ends it, and every chunk names the request its
audio belongs to. The LLM is ``ScriptedModel`` (a test double with a known answer).
"""

from __future__ import annotations

import base64

import pytest

from strands_kokoro import KokoroSpeech
from strands_kokoro.audio_encoding import decode_audio
from strands_kokoro.protocol import audio_ms
from tests.model_server_process import RunningServer
from tests.scripted_model import ScriptedCall
from tests.strands_kokoro.speech_doubles import make_agent, run_turn

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

ANSWER = "Otters hold hands while they sleep. They wrap themselves in kelp."
MP3_SLACK_MS = 120.0  # LAME's encoder delay (46 ms at 24 kHz) and its last frame's padding


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("fmt", ["opus", "mp3"])
async def test_a_turn_in_a_compressed_format_is_one_stream(model_server: RunningServer, fmt: str) -> None:
    speech = KokoroSpeech(endpoint=model_server.ws_url, audio_format=fmt)  # type: ignore[arg-type]
    agent, _ = make_agent(speech, [ScriptedCall(ANSWER)])
    turn = await run_turn(speech.stream(agent, "Tell me about otters."))
    chunks = [e for e in turn.events if e["type"] == "audio_chunk"]
    end = turn.events[-1]
    assert end["type"] == "agent_end" and end["chunks"] == len(chunks) >= 2
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    assert {c["format"] for c in chunks} == {fmt} and {c["sample_rate"] for c in chunks} == {24_000}
    sentences = [c["sentence"] for c in chunks]
    assert sentences == sorted(sentences) and sentences[-1] >= 1  # both sentences, in order
    stream = b"".join(base64.b64decode(c["audio"]) for c in chunks)
    if fmt == "opus":
        assert stream[:4] == b"OggS" and stream.count(b"OpusHead") == 1
    decoded_ms = audio_ms(len(decode_audio(stream, fmt, 24_000)), 24_000)  # type: ignore[arg-type]
    if fmt == "opus":
        assert decoded_ms == pytest.approx(end["audio_ms"], abs=1.0)
    else:
        assert end["audio_ms"] - 1.0 <= decoded_ms <= end["audio_ms"] + MP3_SLACK_MS
    # Compressed: a few KB per second of speech (PCM would be 48 KB).
    assert len(stream) / (end["audio_ms"] / 1000) < 6_000


def test_an_unknown_audio_format_is_refused_when_speech_is_made() -> None:
    with pytest.raises(ValueError, match="audio_format"):
        KokoroSpeech(audio_format="flac")  # type: ignore[arg-type]


async def test_a_compressed_turns_first_chunk_carries_the_first_window(model_server: RunningServer) -> None:
    """The turn's stream starts with its first window: the first ``audio_chunk`` in Opus or MP3 decodes on
    its own to about the audio of the first chunk of the same turn in PCM (less only what the codec
    holds for its next frame, and not the next window's too). Order of events, not time."""
    first: dict[str, bytes] = {}
    for fmt in ("pcm", "opus", "mp3"):
        speech = KokoroSpeech(endpoint=model_server.ws_url, audio_format=fmt)  # type: ignore[arg-type]
        agent, _ = make_agent(speech, [ScriptedCall(ANSWER)])
        turn = await run_turn(speech.stream(agent, "Tell me about otters."))
        chunks = [e for e in turn.events if e["type"] == "audio_chunk"]
        first[fmt] = base64.b64decode(chunks[0]["audio"])
        if fmt == "pcm":
            assert audio_ms(len(base64.b64decode(chunks[1]["audio"])), 24_000) > 300  # a second window shows
    window_ms = audio_ms(len(first["pcm"]), 24_000)
    for fmt in ("opus", "mp3"):
        decoded_ms = audio_ms(len(decode_audio(first[fmt], fmt, 24_000)), 24_000)  # type: ignore[arg-type]
        assert window_ms - 200 <= decoded_ms <= window_ms + 100, (fmt, decoded_ms, window_ms)
