"""What a listener hears of a recorded turn: a real-time player fed by the audio chunks as they arrived.

The player (architecture §7) starts at the first audio byte and plays every chunk in order, each as soon
as it has arrived and the one before it has finished. Where the next chunk has not arrived when the
audio before it ends, the listener hears nothing: a stall. The result is a list of playback blocks
(stretches of continuous audio) and the stalls between them, which the stall figure and the timeline
chart both read, so the number and the picture cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentcore_app.local.turn_record import TurnRecord


@dataclass(frozen=True, slots=True)
class Block:
    """A stretch of continuous playback: wall-clock ``start_ms``..``end_ms`` (since the request was
    sent) plays the turn's audio from ``audio_ms`` on."""

    start_ms: float
    end_ms: float
    audio_ms: float


@dataclass(frozen=True, slots=True)
class Playback:
    """The blocks the listener hears, in order; the silences between them are stalls."""

    blocks: tuple[Block, ...]

    @property
    def stalls(self) -> list[tuple[float, float]]:
        """(start, end) of every silence between two blocks, in ms since the request was sent."""
        return [(a.end_ms, b.start_ms) for a, b in zip(self.blocks, self.blocks[1:], strict=False)]

    @property
    def stall_ms(self) -> float:
        return sum(end - start for start, end in self.stalls)

    def heard_at(self, audio_ms: float) -> float | None:
        """When the listener hears the audio at ``audio_ms`` into the turn (None: past its end)."""
        for block in self.blocks:
            if audio_ms < block.audio_ms + (block.end_ms - block.start_ms):
                return block.start_ms + max(0.0, audio_ms - block.audio_ms)
        return None


def chunk_timeline(record: TurnRecord) -> list[tuple[float, float]]:
    """(arrival ms, audio length ms) of every audio chunk, in arrival order.

    A compressed chunk's length is its share of the turn's decoded audio by bytes (exact for PCM; for
    Opus and MP3, whose frames vary little in size, close enough for the stall estimate).
    """
    chunks = record.of_type("audio_chunk")
    sizes = record.chunk_bytes
    total_ms = record.audio_s * 1000.0
    total_bytes = sum(sizes) or 1
    if record.audio_format != "pcm_s16le":
        return [(c.at_ms, total_ms * n / total_bytes) for c, n in zip(chunks, sizes, strict=True)]
    return [
        (c.at_ms, n / 2 / int(c.event.get("sample_rate", record.sample_rate)) * 1000.0)
        for c, n in zip(chunks, sizes, strict=True)
    ]


def playback(record: TurnRecord) -> Playback:
    """The turn as a real-time player started at the first audio byte plays it."""
    blocks: list[Block] = []
    played = 0.0  # audio ms handed to the player so far
    for arrival, duration in chunk_timeline(record):
        if duration <= 0:
            continue
        last = blocks[-1] if blocks else None
        if last is not None and arrival <= last.end_ms:
            blocks[-1] = Block(last.start_ms, last.end_ms + duration, last.audio_ms)
        else:
            blocks.append(Block(arrival, arrival + duration, played))
        played += duration
    return Playback(tuple(blocks))


def stall_ms(record: TurnRecord) -> float:
    """Silence a real-time player has after starting at the first audio byte (architecture §7)."""
    return playback(record).stall_ms
