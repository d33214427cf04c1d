"""The request ledger releases each request's replies in the order the requests were made."""

from __future__ import annotations

import pytest

from strands_kokoro.speech_options import SpeechOptions
from strands_kokoro.turn.request_ledger import (
    AudioReply,
    CompletedReply,
    FailedReply,
    Reply,
    RequestLedger,
)

OPTIONS = SpeechOptions(
    mode="bidi",
    voice="af_heart",
    speed=1.0,
    sample_rate=24000,
    lang=None,
    max_chars=350,
    tool_filler=None,
    tool_filler_after_s=1.0,
    reconnect_attempts=2,
    reconnect_backoff_s=0.25,
    overload_retry_s=5.0,
    audio_format="pcm",
)


def new_ledger() -> tuple[RequestLedger, list[tuple[int, Reply]]]:
    released: list[tuple[int, Reply]] = []
    return RequestLedger("t", OPTIONS, lambda r, reply: released.append((r.index, reply))), released


def test_requests_are_numbered_and_carry_the_turns_settings() -> None:
    ledger, _ = new_ledger()
    first = ledger.new("Hello there.")
    second = ledger.new("Piece", previous="Before", following="after it")
    assert (first.index, first.request_id, second.request_id) == (0, "t-0", "t-1")
    assert second.wire.previous_text == "Before" and second.wire.next_text == "after it"
    assert ledger.pending == [first, second] and ledger.count == 2


def test_a_later_requests_replies_wait_until_every_earlier_request_is_out() -> None:
    ledger, released = new_ledger()
    first, second, third = (ledger.new(text) for text in ("One.", "Two.", "Three."))
    ledger.put(second, AudioReply(b"b"))  # refused-and-resent order: the second answers first
    ledger.finish(third, CompletedReply(()))
    assert released == []
    ledger.put(first, AudioReply(b"a"))
    assert [index for index, _ in released] == [0]
    ledger.finish(first, CompletedReply(()))
    assert [index for index, _ in released] == [0, 0, 1]
    ledger.finish(second, FailedReply("engine_failed", "no"))
    assert [index for index, _ in released] == [0, 0, 1, 1, 2]


def test_clear_forgets_every_request_and_releases_nothing_held() -> None:
    ledger, released = new_ledger()
    first, second = ledger.new("One."), ledger.new("Two.")
    ledger.put(second, AudioReply(b"b"))
    assert ledger.clear() == 2
    ledger.finish(first, CompletedReply(()))
    ledger.put(second, AudioReply(b"c"))
    assert released == [] and not ledger.pending and ledger.get(first.request_id) is None


def test_a_resent_request_releases_only_the_audio_the_listener_has_not_had() -> None:
    ledger, released = new_ledger()
    request = ledger.new("One.")
    ledger.audio(request.request_id, b"abcd")
    ledger.sent(request, 2, 0.0)  # re-sent whole after a drop: its audio starts over
    ledger.audio(request.request_id, b"abcdef")
    ledger.audio("t-9", b"zz")  # not one of ours
    assert [reply for _, reply in released] == [AudioReply(b"abcd"), AudioReply(b"ef")]


def test_a_requests_state_is_read_only_outside_the_ledger() -> None:
    ledger, _ = new_ledger()
    request = ledger.new("One.")
    with pytest.raises(AttributeError):
        request.sent_at = 1.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        request.index = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ledger.pending = []  # type: ignore[misc]


def test_a_refused_request_waits_to_be_sent_again_and_its_budget_starts_at_the_first_refusal() -> None:
    ledger, _ = new_ledger()
    request = ledger.new("One.")
    ledger.sent(request, 1, 5.0)
    assert ledger.unsent(1) == []
    ledger.refused(request, 10.0)
    ledger.refused(request, 20.0)
    assert (request.refusals, request.first_refused_at) == (2, 10.0)
    assert ledger.unsent(1) == [request]  # waits for a re-send on the same connection


def test_synthesis_start_restarts_the_attempt_at_the_servers_rate() -> None:
    ledger, released = new_ledger()
    request = ledger.new("One.")
    ledger.audio(request.request_id, b"\0\0" * 240)
    assert ledger.audio_under_way()
    assert ledger.started(request.request_id, 16000) is request
    assert ledger.started("t-9", 16000) is None
    assert (request.sample_rate, request.received_ms) == (16000, 0.0)
    ledger.audio(request.request_id, b"\0\0" * 320)  # passes over the 240 samples the listener had
    assert [len(reply.pcm) for _, reply in released if isinstance(reply, AudioReply)] == [480, 160]
    assert request.heard_ms == 20.0 and request.received_ms == 20.0


def test_the_first_audio_heard_is_the_requests_first_audio() -> None:
    ledger, _ = new_ledger()
    request = ledger.new("One.")
    ledger.heard(request, 12.0, None)
    ledger.heard(request, 30.0, 5.0)
    assert (request.first_audio_ms, request.buffer_ms) == (12.0, None)
