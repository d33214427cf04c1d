"""The cascade's own events, beside Strands' bidi events on ``BidiAgent.receive()``.

Strands' bidi event set has no error that leaves the conversation running, and no moment the user's
speech started or ended; a cascade has both. They are ``TypedEvent`` dicts like Strands' own, so
``BidiAgent`` passes them to its outputs unchanged (``AudioIO`` ignores them).
"""

from __future__ import annotations

from typing import Literal, cast

from strands.types._events import TypedEvent

__all__ = ["ListeningErrorEvent", "SpeechErrorEvent", "UserSpeechEvent"]


class ListeningErrorEvent(TypedEvent):
    """The user's input was refused or cut (a ``ListeningErrorCode``); the conversation goes on."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__({"type": "listening_error", "code": code, "message": message})

    @property
    def code(self) -> str:
        return cast(str, self["code"])

    @property
    def message(self) -> str:
        return cast(str, self["message"])


class SpeechErrorEvent(TypedEvent):
    """The answer's speech failed (a code of the speech turn's ``speech_error``); its text goes on (in the
    assistant transcript)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__({"type": "speech_error", "code": code, "message": message})

    @property
    def code(self) -> str:
        return cast(str, self["code"])


class UserSpeechEvent(TypedEvent):
    """The user started speaking (``phase="start"``: a voiced frame after silence) or finished an utterance
    (``"end"``: the silence that ends the turn has passed). ``input_ms``: where, in ms of the user's audio
    received since the connection started; for ``end`` it is the end of the last voiced frame."""

    def __init__(self, phase: Literal["start", "end"], input_ms: float) -> None:
        super().__init__({"type": "user_speech", "phase": phase, "input_ms": round(input_ms, 1)})

    @property
    def phase(self) -> str:
        return cast(str, self["phase"])

    @property
    def input_ms(self) -> float:
        return cast(float, self["input_ms"])
