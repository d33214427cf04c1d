"""``--llm-pace``: a model's text released no faster than a hosted model's rate, everything else unchanged.

The inner model is the scripted test double (``tests.scripted_model``) writing far faster than the pace.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from agentcore_app.local.paced_model import PacedModel, PaceError
from tests.scripted_model import ScriptedModel, tokens

ANSWER = "One two three four five six seven eight nine ten eleven."


def test_text_is_released_at_the_pace_and_every_event_passes_through() -> None:
    inner = ScriptedModel(ANSWER, tokens_per_s=2000.0)
    paced = PacedModel(inner, 40.0)

    async def collect() -> list[tuple[float, dict]]:
        started = time.perf_counter()
        return [(time.perf_counter() - started, event) async for event in paced.stream([], None, None)]

    timed = asyncio.run(collect())
    texts = [(at, e) for at, e in timed if "contentBlockDelta" in e]
    assert "".join(e["contentBlockDelta"]["delta"]["text"] for _, e in texts) == ANSWER
    assert len(texts) == len(tokens(ANSWER))
    spread = texts[-1][0] - texts[0][0]
    assert spread >= (len(texts) - 1) / 40.0 - 0.005  # never faster than the pace
    kinds = [next(iter(e)) for _, e in timed]
    assert kinds[:2] == ["messageStart", "contentBlockStart"] and "messageStop" in kinds
    assert paced.get_config() == inner.get_config()


def test_a_slower_model_is_not_slowed_further() -> None:
    inner = ScriptedModel(ANSWER, tokens_per_s=50.0)

    async def spread(model: object) -> float:
        stamps = [
            time.perf_counter()
            async for event in model.stream([], None, None)  # type: ignore[attr-defined]
            if "contentBlockDelta" in event
        ]
        return stamps[-1] - stamps[0]

    paced = asyncio.run(spread(PacedModel(inner, 1000.0)))
    assert paced < (len(tokens(ANSWER)) - 1) / 50.0 + 0.5  # its own pace, no added wait per token


@pytest.mark.parametrize("pace", [0.0, -5.0, float("inf"), float("nan")])
def test_a_pace_that_is_no_rate_is_refused(pace: float) -> None:
    with pytest.raises(PaceError, match="positive number of tokens per second"):
        PacedModel(ScriptedModel(ANSWER), pace)
