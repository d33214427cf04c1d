"""Architecture §4 events on a WebSocket: JSON text frames, audio as binary frames. Both ends use this module.

The app's ``/ws`` (:mod:`agentcore_app.ws_turns`) writes a turn's events with :func:`turn_frames`; its
Python clients read them with :class:`FrameReader` (the browser player has the same rules in
``static/transport.js``). Every event is a JSON text frame with its turn's ``request_id``, ``agent_start``
too; an ``audio_chunk`` is the event without ``audio`` plus ``bytes``, and **the next frame is a binary
frame of exactly those bytes**. A frame is control only when its WHOLE payload is one JSON object. Every
turn request ends with exactly one ``turn_end {request_id, status}`` and nothing of it follows; ``cancel``
is answered ``cancelled {dropped}`` after the ``turn_end`` of each turn it stopped; an ``error`` about a
message that is no turn request has ``request_id: null``. Every message, both ways: docs/transports.md.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from strands_kokoro.protocol import control_object, json_text

TurnStatus = Literal["completed", "cancelled", "failed", "refused", "joined"]
WsFrame = str | bytes


def turn_frames(event: Mapping[str, Any], request_id: str) -> list[WsFrame]:
    """One event of turn ``request_id`` as the frames that carry it (an ``audio_chunk``: header + audio)."""
    framed = {**event, "request_id": request_id}
    if framed.get("type") != "audio_chunk":
        return [json_text(framed)]
    audio = base64.b64decode(str(framed.pop("audio", "")))
    framed["bytes"] = len(audio)
    return [json_text(framed), audio]


def turn_end(request_id: str | None, status: TurnStatus) -> str:
    """The last frame of a turn request: nothing of ``request_id`` follows it."""
    return json_text({"type": "turn_end", "request_id": request_id, "status": status})


def cancelled(dropped: int) -> str:
    """The answer to ``cancel``: how many turns (running and queued) it stopped."""
    return json_text({"type": "cancelled", "dropped": dropped})


def refusal(request_id: str | None, code: str, message: str) -> str:
    """An ``error`` about one message (``request_id`` None: it was no turn request)."""
    return json_text({"type": "error", "request_id": request_id, "code": code, "message": message})


def listening_error(request_id: str | None, code: str, message: str) -> str:
    """A ``listening_error`` about audio the microphone ``request_id`` refused (the microphone stays open)."""
    return json_text({"type": "listening_error", "request_id": request_id, "code": code, "message": message})


def turn_request(payload: Mapping[str, Any], request_id: str | None = None) -> str:
    """A client's turn request (``payload`` as for POST /invocations)."""
    named = {} if request_id is None else {"request_id": request_id}
    return json_text({"type": "turn", **payload, **named})


def audio_start(request_id: str | None = None, **speech: Any) -> str:
    """A client's microphone opening: 16 kHz mono s16le in binary frames after it (``speech``: voice,
    speed of the answers)."""
    named = {} if request_id is None else {"request_id": request_id}
    opening = {"type": "audio_start", "sample_rate": 16_000, "channels": 1, "format": "pcm_s16le"}
    return json_text({**opening, **speech, **named})


CANCEL = json_text({"type": "cancel"})
AUDIO_STOP = json_text({"type": "audio_stop"})


@dataclass(frozen=True, slots=True)
class ReadEvent:
    """One event as read: the JSON object, and for an ``audio_chunk`` the audio bytes of its frame."""

    event: dict[str, Any]
    audio: bytes | None = None


class FrameReader:
    """Pairs every ``audio_chunk`` header with the binary frame after it; other frames pass as they are.

    Raises :class:`ValueError` when the frames break the rules (audio without a header, a header whose
    frame is not audio or not as long as announced): the stream is corrupt.
    """

    def __init__(self) -> None:
        self._header: dict[str, Any] | None = None

    def feed(self, payload: WsFrame) -> ReadEvent | None:
        """The event this frame completes, or None (a header waiting for its audio)."""
        obj = control_object(payload)
        if self._header is not None:
            header, self._header = self._header, None
            if obj is not None or not isinstance(payload, bytes) or len(payload) != header.get("bytes"):
                raise ValueError("an audio_chunk header was not followed by its binary frame")
            return ReadEvent(header, payload)
        if obj is None:
            raise ValueError("a binary frame without an audio_chunk header before it")
        if obj.get("type") == "audio_chunk":
            self._header = obj
            return None
        return ReadEvent(obj)
