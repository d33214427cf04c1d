"""The user's side of a spoken conversation, for tests: speech rendered by the REAL model server in
another voice, with noise added, and a microphone that feeds it to a cascade in real time.

A microphone sends 32 ms frames at the pace a sound card would; between utterances it sends silence
(a little noise), as a live microphone does. Nothing here decides a test's outcome by time: tests wait
on the cascade's events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import soxr

from strands_kokoro.sessions import AudioData, SynthesisCompleted, SynthesizeRequest, open_session

USER_VOICE = "am_michael"  # the agent speaks with af_heart, the default
RATE = 16_000
FRAME_SAMPLES = 512
FRAME_S = FRAME_SAMPLES / RATE


async def render_user_speech(ws_url: str, text: str, *, voice: str = USER_VOICE) -> bytes:
    """``text`` spoken by the model server in ``voice``, as 16 kHz s16le (clean)."""
    pcm = b""
    rate = 24_000
    async with open_session(ws_url) as session:
        await session.send(SynthesizeRequest(text=text, request_id="user", voice=voice))
        async for event in session.events():
            if isinstance(event, AudioData):
                pcm += event.pcm
            elif isinstance(event, SynthesisCompleted):
                break
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    resampled = soxr.resample(audio, rate, RATE)
    return (np.clip(resampled, -1, 1) * 32767).astype("<i2").tobytes()


def with_noise(pcm: bytes, *, snr_db: float = 20.0, seed: int = 7) -> bytes:
    """``pcm`` with white noise ``snr_db`` below its level (a laptop microphone in a quiet room)."""
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
    level = float(np.sqrt(np.mean(audio**2))) or 1.0
    noise = np.random.default_rng(seed).normal(0.0, level / 10 ** (snr_db / 20), audio.shape)
    return np.clip(audio + noise, -32768, 32767).astype("<i2").tobytes()


def room_tone(seconds: float, *, level: float = 30.0, seed: int = 3) -> bytes:
    """What a live microphone sends when nobody speaks: faint noise."""
    n = int(seconds * RATE)
    return np.random.default_rng(seed).normal(0.0, level, n).astype("<i2").tobytes()


def noise_burst(seconds: float = 0.2, *, level: float = 6000.0, seed: int = 11) -> bytes:
    """A loud burst of noise (a door, a cough, a knock): not speech."""
    n = int(seconds * RATE)
    return np.random.default_rng(seed).normal(0.0, level, n).clip(-32768, 32767).astype("<i2").tobytes()


class Utterance:
    """Audio queued on a :class:`Microphone`: where it starts and ends in the microphone's stream (s)."""

    def __init__(self) -> None:
        self.done = asyncio.Event()
        self.started_s = 0.0
        self.ended_s = 0.0


class Microphone:
    """Feeds audio to ``send`` in 32 ms frames at real-time pace; room tone whenever nothing is queued."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        self._send = send
        self._queue: asyncio.Queue[tuple[bytes, Utterance]] = asyncio.Queue()
        self._tone = room_tone(1.0)
        self.sent_s = 0.0  # audio sent so far, in seconds

    def say(self, pcm: bytes) -> Utterance:
        """Queue ``pcm``; the utterance says when its first frame went out and when its last did."""
        utterance = Utterance()
        self._queue.put_nowait((pcm, utterance))
        return utterance

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        tone_at = 0
        step = 2 * FRAME_SAMPLES
        while True:
            if not self._queue.empty():
                pcm, utterance = self._queue.get_nowait()
                utterance.started_s = self.sent_s
                for i in range(0, len(pcm), step):
                    next_at = await self._frame(pcm[i : i + step], next_at)
                utterance.ended_s = self.sent_s
                utterance.done.set()
                continue
            frame = self._tone[tone_at : tone_at + step]
            tone_at = (tone_at + step) % (len(self._tone) - step)
            next_at = await self._frame(frame, next_at)

    async def _frame(self, frame: bytes, next_at: float) -> float:
        await self._send(frame)
        self.sent_s += len(frame) / 2 / RATE
        next_at += len(frame) / 2 / RATE
        await asyncio.sleep(max(0.0, next_at - asyncio.get_running_loop().time()))
        return next_at


class EventLog:
    """Events as they arrive: every one kept (:meth:`of`) and each awaited in order (:meth:`until`)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def add(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        self._queue.put_nowait(event)

    async def until(self, kind: str, **fields: Any) -> dict[str, Any]:
        """The next event of ``kind`` with these ``fields`` (the ones before it are passed over)."""
        while True:
            event = await self._queue.get()
            if event.get("type") == kind and all(event.get(k) == v for k, v in fields.items()):
                return event

    def of(self, kind: str, **fields: Any) -> list[dict[str, Any]]:
        return [
            e for e in self.events if e.get("type") == kind and all(e.get(k) == v for k, v in fields.items())
        ]
