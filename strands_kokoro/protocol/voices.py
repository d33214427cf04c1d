"""A request's voice: one voice's name, or a mix of several (Kokoro-FastAPI's ``af_bella(2)+af_sky(1)``).

Why here: both ends read a mix alike (the client sends it in one canonical spelling, the server mixes
the voices it names), so its syntax and limits are the wire's; whether each voice exists is the
server's to say (``unknown_voice``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from strands_kokoro.protocol.errors import ErrorCode, ProtocolError
from strands_kokoro.protocol.json_wire import shown
from strands_kokoro.protocol.limits import MAX_VOICE_PARTS, MAX_VOICE_WEIGHT


@dataclass(frozen=True, slots=True)
class VoiceMix:
    """A voice as a request names it: one voice, or several mixed, each with its share (summing to 1).

    Kokoro-FastAPI's syntax: ``af_bella+af_sky`` (equal shares), ``af_bella(2)+af_sky(1)`` (two thirds and
    one third). The mixed voice is the shares' weighted mean of the voices' style tables; its language
    is its first voice's.
    """

    parts: tuple[tuple[str, float], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.parts)

    @property
    def canonical(self) -> str:
        """One spelling per mix (``af_bella(0.6667)+af_sky(0.3333)``; a single voice is its name)."""
        if len(self.parts) == 1:
            return self.parts[0][0]
        return "+".join(f"{name}({round(share, 4):g})" for name, share in self.parts)


_VOICE_PART = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9_.-]{0,63})\s*(?:\(\s*([^()]*?)\s*\))?\s*")


def parse_voice(spec: str, request_id: str | None = None) -> VoiceMix:
    """A voice or a voice mix (see :class:`VoiceMix`), or ``bad_voice``: a part that is not a name with
    an optional ``(weight)``, a weight that is not a positive number up to ``MAX_VOICE_WEIGHT``, or more
    than ``MAX_VOICE_PARTS`` voices. Whether each voice exists is the server's to say (``unknown_voice``).
    A voice named twice gets its weights added."""
    pieces = spec.split("+")
    if len(pieces) > MAX_VOICE_PARTS:
        raise ProtocolError(
            ErrorCode.BAD_VOICE,
            f"a voice mix has at most {MAX_VOICE_PARTS} voices; got {len(pieces)} in {shown(spec)}",
            request_id,
        )
    weights: dict[str, float] = {}
    for piece in pieces:
        match = _VOICE_PART.fullmatch(piece)
        if match is None:
            raise ProtocolError(
                ErrorCode.BAD_VOICE,
                f"{shown(spec)} is not a voice or a mix such as af_bella(2)+af_sky(1)",
                request_id,
            )
        name, raw = match.group(1), match.group(2)
        weight = 1.0 if raw is None else _weight(raw)
        if weight is None:
            raise ProtocolError(
                ErrorCode.BAD_VOICE,
                f"the weight of {shown(name)} in a voice mix must be a number above 0 and up to "
                f"{MAX_VOICE_WEIGHT:g}, got {shown(raw)}",
                request_id,
            )
        weights[name] = weights.get(name, 0.0) + weight
    total = sum(weights.values())
    return VoiceMix(tuple((name, weight / total) for name, weight in weights.items()))


def _weight(raw: str) -> float | None:
    try:
        weight = float(raw)
    except ValueError:
        return None
    return weight if math.isfinite(weight) and 0 < weight <= MAX_VOICE_WEIGHT else None


def is_voice_mix(voice: str) -> bool:
    """Whether ``voice`` is written as a mix (or a weighted voice): it holds ``+`` or parentheses."""
    return any(mark in voice for mark in "+()")


def voice_names(voice: str) -> tuple[str, ...]:
    """The voices ``voice`` names: itself, or each voice of a mix (none for a mix that is not one)."""
    if not is_voice_mix(voice):
        return (voice,)
    try:
        return parse_voice(voice).names
    except ProtocolError:
        return ()
