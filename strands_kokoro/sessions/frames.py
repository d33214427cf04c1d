"""Turn server frames into :data:`SessionEvent` values, once, for every bidirectional transport.

The WebSocket session and the SageMaker bidi session both receive the same frames (SageMaker's router
re-wraps them as payload parts), so the classification rule of DESIGN §3 and the "audio belongs to
the request between its start and complete" bookkeeping live here and nowhere else.
"""

from __future__ import annotations

from typing import Any

from strands_kokoro.protocol import DEFAULT_SAMPLE_RATE, control_frame
from strands_kokoro.sessions.base import (
    AudioData,
    Cancelled,
    ServerError,
    SessionEvent,
    SynthesisCompleted,
    SynthesisStarted,
)


def _float(value: Any, default: float = 0.0) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


class FrameDecoder:
    """Stateful decoder for one session: remembers which request the incoming audio belongs to.

    Audio that arrives outside any request (a server bug, or the tail of a cancelled request) is
    dropped rather than credited to the wrong sentence. Control frames of unknown ``type`` are ignored
    so a newer server can add frames without breaking older clients.
    """

    def __init__(self) -> None:
        self.current_request_id: str | None = None

    def decode(self, payload: bytes | str) -> SessionEvent | None:
        frame = control_frame(payload)
        if frame is None:
            if isinstance(payload, str) or self.current_request_id is None or not payload:
                return None
            return AudioData(self.current_request_id, payload)
        return self._control(frame)

    def _control(self, frame: dict[str, Any]) -> SessionEvent | None:
        kind = frame.get("type")
        raw_id = frame.get("request_id")
        request_id = raw_id if isinstance(raw_id, str) else None
        if kind == "synthesis_start" and request_id is not None:
            self.current_request_id = request_id
            rate = frame.get("sample_rate")
            channels = frame.get("channels")
            return SynthesisStarted(
                request_id,
                sample_rate=rate if isinstance(rate, int) else DEFAULT_SAMPLE_RATE,
                channels=channels if isinstance(channels, int) else 1,
            )
        if kind == "synthesis_complete" and request_id is not None:
            if self.current_request_id == request_id:
                self.current_request_id = None
            chunks = frame.get("chunks")
            first = frame.get("first_audio_ms")
            return SynthesisCompleted(
                request_id,
                audio_ms=_float(frame.get("audio_ms")),
                chunks=chunks if isinstance(chunks, int) else 0,
                first_audio_ms=_float(first) if first is not None else None,
                elapsed_ms=_float(frame.get("elapsed_ms")),
            )
        if kind == "error":
            if request_id is not None and request_id == self.current_request_id:
                self.current_request_id = None
            code = frame.get("code")
            message = frame.get("message")
            return ServerError(
                request_id,
                code if isinstance(code, str) else "unknown_error",
                message if isinstance(message, str) else "",
            )
        if kind == "cancelled":
            self.current_request_id = None
            dropped = frame.get("dropped")
            return Cancelled(dropped if isinstance(dropped, int) else 0)
        return None
