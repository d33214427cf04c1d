"""Unit tests of payload validation: every refusal carries a stable code, nothing raises past it."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore_app.errors import TurnRefused
from agentcore_app.payload import MAX_PROMPT_CHARS, Turn, parse_turn


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({}, "missing_prompt"),
        ({"prompt": None}, "missing_prompt"),
        ({"prompt": "   "}, "missing_prompt"),
        ({"prompt": 42}, "bad_payload"),
        ({"prompt": "x" * (MAX_PROMPT_CHARS + 1)}, "prompt_too_long"),
        ({"prompt": "Hi \ud800 there."}, "bad_utf8"),  # valid JSON; the LLM failed on it (agent_failed)
        ({"prompt": "hi", "mode": "stream"}, "unknown_mode"),
        ({"prompt": "hi", "mode": 1}, "unknown_mode"),
        ({"prompt": "hi", "voice": 7}, "bad_voice"),
        ({"prompt": "hi", "voice": ""}, "bad_voice"),
        ({"prompt": "hi", "speed": "fast"}, "bad_speed"),
        ({"prompt": "hi", "speed": True}, "bad_speed"),
        ({"prompt": "hi", "speed": 9.0}, "bad_speed"),
        ({"prompt": "hi", "speed": float("nan")}, "bad_speed"),
        ({"prompt": "hi", "speed": int("1" * 400)}, "bad_speed"),
        ({"prompt": "hi", "format": "flac"}, "bad_format"),
        ({"prompt": "hi", "format": ["opus"]}, "bad_format"),
        ([1, 2], "bad_payload"),
        ("just text", "bad_payload"),
        (None, "bad_payload"),
    ],
)
def test_bad_payload_is_refused_with_code(payload: Any, code: str) -> None:
    with pytest.raises(TurnRefused) as refused:
        parse_turn(payload)
    assert refused.value.code == code
    event = refused.value.event()
    assert event == {"type": "error", "code": code, "message": refused.value.message}
    assert refused.value.message  # a human-readable reason, never empty


def test_good_payload_defaults_to_bidi() -> None:
    assert parse_turn({"prompt": "hello"}) == Turn(prompt="hello", mode="bidi")
    assert parse_turn({"prompt": "hi", "mode": None}).mode == "bidi"


def test_good_payload_keeps_every_field() -> None:
    turn = parse_turn({"prompt": "hi", "mode": "batch", "voice": "am_michael", "speed": 1, "format": "opus"})
    assert turn == Turn(prompt="hi", mode="batch", voice="am_michael", speed=1.0, format="opus")
    assert isinstance(turn.speed, float)
    assert parse_turn({"prompt": "hi"}).format == "pcm"  # a request that names no format gets PCM
