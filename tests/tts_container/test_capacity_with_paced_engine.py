"""Many listeners against the real server, its engine a paced double (``PacedToneEngine``): a fixed
number of engine seconds per second of audio, spent sleeping, so the server's measured capacity and
every listener's timing hold on a busy test machine. The same paths run on the real model in
``benchmarks/capacity.py`` (figures in docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.capacity import play
from strands_kokoro.protocol import WS_PATH, ErrorCode, audio_ms
from tests.model_server_process import running_app
from tests.tts_container.server_fakes import SECONDS_PER_WORD, TONE_HZ, ToneEngine, tone
from tests.tts_container.server_harness import dumps, open_ws, read_frame, stats
from tts_container.app import create_app
from tts_container.engines.base import Audio
from tts_container.scheduling.listener import ANSWER_GAP_S
from tts_container.synthesis.stitching import KEEP_LEAD_S, KEEP_TAIL_S

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
ENGINE_S_PER_AUDIO_S = 0.35  # 2.86 audio seconds per engine second: two listeners at 90%
SENTENCE = "One two three four five six seven eight."
STUTTER_S = 0.25


class PacedToneEngine(ToneEngine):
    """A test double: ``ToneEngine``'s tones, each taking ``ENGINE_S_PER_AUDIO_S`` per second of the
    audio the server sends of it (the tone and the edges it keeps)."""

    def segments(
        self, text: str, *, voice: str, speed: float, lang: str, context: object = None
    ) -> Iterator[Audio]:
        for sentence in text.split(". "):
            body_s = len(sentence.split()) * SECONDS_PER_WORD / speed
            time.sleep(ENGINE_S_PER_AUDIO_S * (body_s + KEEP_LEAD_S + KEEP_TAIL_S))
            yield tone(body_s, TONE_HZ[voice])


async def listen(address: str, name: str, sentences: int, start: asyncio.Event) -> dict[str, Any]:
    """Send an answer of ``sentences`` sentences at ``start``; what arrived and when, or the refusal."""
    arrivals: list[tuple[float, float]] = []
    async with open_ws(f"ws://{address}{WS_PATH}") as ws:
        await start.wait()
        began = time.perf_counter()
        for index in range(sentences):
            await ws.send(dumps(text=SENTENCE, request_id=f"{name}-{index}"))
        done = 0
        while done < sentences:
            frame = await read_frame(ws)
            now = time.perf_counter() - began
            if isinstance(frame, bytes):
                arrivals.append((now, audio_ms(len(frame), 24_000) / 1000))
            elif frame["type"] == "error":
                return {"refusal": frame, "after_s": now, "arrivals": arrivals}
            elif frame["type"] == "synthesis_complete":
                done += 1
    return {"refusal": None, "arrivals": arrivals}


async def test_past_capacity_a_new_answer_is_refused_at_once_and_the_listeners_speaking_never_stall() -> None:
    async with running_app(create_app(PacedToneEngine)) as address:
        capacity = (await stats(address))["capacity_listeners"]
        assert capacity == 2, f"the paced engine makes 2.86 audio s per engine s; measured {capacity}"
        start = asyncio.Event()
        speaking = [asyncio.create_task(listen(address, f"l{i}", 6, start)) for i in range(capacity)]
        await asyncio.sleep(0.3)
        start.set()
        await asyncio.sleep(0.5)  # every admitted listener is inside its answer
        late = await listen(address, "late", 1, _set())
        assert late["refusal"] is not None and late["refusal"]["code"] == ErrorCode.OVERLOADED
        assert late["refusal"]["request_id"] == "late-0"
        assert late["refusal"]["retry_after_ms"] >= 250
        assert late["after_s"] < 0.1, "a full server answers at once"
        assert late["arrivals"] == []
        async with httpx.AsyncClient() as client:  # POST is refused alike, /ping stays healthy
            refused = await client.post(f"http://{address}/invocations", json={"text": SENTENCE})
            assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
            assert refused.json()["code"] == ErrorCode.OVERLOADED
            assert (await client.get(f"http://{address}/ping")).status_code == 200
            metrics = (await client.get(f"http://{address}/metrics")).text
        families = {family.name: family for family in text_string_to_metric_families(metrics)}
        assert {"kokoro_first_audio_seconds", "kokoro_stall_seconds", "kokoro_listeners"} <= set(families)
        assert 'kokoro_answers_total{outcome="refused"} 2.0' in metrics
        assert f"kokoro_capacity_listeners {float(capacity)}" in metrics
        heard = await asyncio.gather(*speaking)
        for listener in heard:
            assert listener["refusal"] is None
            assert max(play(listener["arrivals"]), default=0.0) <= STUTTER_S
        await asyncio.sleep(ANSWER_GAP_S + 0.2)  # their answers are over: a place is free again
        again = await listen(address, "again", 1, _set())
        assert again["refusal"] is None and again["arrivals"]


async def test_the_next_sentences_of_an_admitted_answer_are_never_refused() -> None:
    async with running_app(create_app(PacedToneEngine)) as address:
        capacity = (await stats(address))["capacity_listeners"]
        start = _set()

        # Every listener sends its sentences one by one, each after the one before it completed.
        async def one_by_one(name: str) -> list[str]:
            codes = []
            async with open_ws(f"ws://{address}{WS_PATH}") as ws:
                await start.wait()
                for index in range(3):
                    await ws.send(dumps(text=SENTENCE, request_id=f"{name}-{index}"))
                    while isinstance(frame := await read_frame(ws), bytes) or frame["type"] not in (
                        "synthesis_complete",
                        "error",
                    ):
                        pass
                    codes.append(frame.get("code", "ok"))
            return codes

        answers = await asyncio.gather(*(one_by_one(f"l{i}") for i in range(capacity)))
        assert all(codes == ["ok", "ok", "ok"] for codes in answers)
        current = await stats(address)
        assert current["answers_admitted"] == capacity and current["answers_refused"] == 0


def _set() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event
