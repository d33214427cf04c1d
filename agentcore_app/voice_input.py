"""The user's voice on ``/ws``: ``audio_start``, the audio it announces, and the conversation it runs on
the library's cascade (:class:`strands_kokoro.listening.KokoroCascade`, one implementation for the
library and the app).

:func:`parse_audio_start` validates the request (16 kHz mono ``pcm_s16le`` or ``unsupported_audio``);
:class:`UserInbox` holds the socket's binary frames (``not_audio``, ``audio_overrun``) and the turns
typed meanwhile until the conversation takes them; :func:`spoken_conversation` runs a ``BidiAgent`` on
the cascade and gives its events as the app's: ``listening_start``, then the cascade's own as they are,
its audio as ``audio_chunk``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from agentcore_app.errors import AppErrorCode, TurnRefused
from agentcore_app.payload import parse_speech_choice
from strands_kokoro.errors import ListeningErrorCode

if TYPE_CHECKING:
    from strands.bidi import BidiAgent

    from strands_kokoro.listening import KokoroCascade

logger = logging.getLogger(__name__)

__all__ = [
    "INPUT_RATE",
    "Listening",
    "UserInbox",
    "parse_audio_start",
    "spoken_conversation",
]

INPUT_RATE = 16_000
INPUT_FORMATS = ("pcm_s16le", "pcm")
MAX_WAITING_MS = 10_000.0  # audio read from the socket that the conversation has not taken yet
FILE_HEADERS = (b"RIFF", b"ID3", b"OggS", b"fLaC", b"\xff\xfb", b"\xff\xf3", b"\x1aE\xdf\xa3")
PASSED_EVENTS = frozenset(
    {
        "bidi_response_start",
        "bidi_response_stop",
        "bidi_audio_start",
        "bidi_audio_stop",
        "bidi_transcript_delta",
        "bidi_transcript_block",
        "bidi_barge_in",
        "user_speech",
        "listening_error",
        "speech_error",
    }
)
_CLOSED = object()


@dataclass(frozen=True, slots=True)
class Listening:
    """A validated ``audio_start``: how the answers are spoken, and the inbox its audio goes to."""

    voice: str | None = None
    speed: float | None = None
    inbox: UserInbox = field(default_factory=lambda: UserInbox())


def parse_audio_start(payload: Mapping[str, Any]) -> Listening:
    """``audio_start``'s fields -> :class:`Listening`, or raise :class:`TurnRefused` (coded)."""
    rate, channels = payload.get("sample_rate"), payload.get("channels", 1)
    audio_format = payload.get("format", "pcm_s16le")
    if rate != INPUT_RATE or channels != 1 or audio_format not in INPUT_FORMATS:
        raise TurnRefused(
            AppErrorCode.UNSUPPORTED_AUDIO,
            f"the microphone must be {INPUT_RATE} Hz mono pcm_s16le; got sample_rate {rate!r}, channels "
            f"{channels!r}, format {audio_format!r}",
        )
    voice, speed = parse_speech_choice(payload)
    return Listening(voice=voice, speed=speed)


class UserInbox:
    """What the user sends a spoken conversation, between the socket's reader and the conversation: the
    microphone's audio and the turns typed meanwhile, in order (thread-safe to feed: the conversation
    runs on the app's worker loop)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()  # the reader's thread puts, the worker loop's thread binds
        self._waiting_ms = 0.0
        self._overrun = False
        self._held: Any = None  # taken from the queue while joining audio, for the next get
        self.closed = False

    def refusal(self, pcm: bytes) -> tuple[ListeningErrorCode, str] | None:
        """Why ``pcm`` is not taken (None: it is)."""
        if len(pcm) % 2 or pcm.startswith(FILE_HEADERS):
            return (
                ListeningErrorCode.NOT_AUDIO,
                "a binary frame must be raw 16 kHz s16le samples (whole samples, not a WAV/MP3/Ogg file)",
            )
        ms = len(pcm) / 2 / INPUT_RATE * 1000.0
        if self._waiting_ms + ms > MAX_WAITING_MS:
            if self._overrun:
                return None  # said once per overrun; the audio is dropped silently after that
            self._overrun = True
            return (
                ListeningErrorCode.AUDIO_OVERRUN,
                f"more than {MAX_WAITING_MS:g} ms of audio waits to be heard: newer audio is dropped "
                "(send it in real time)",
            )
        return None

    def put(self, pcm: bytes) -> bool:
        """Queue ``pcm`` (checked with :meth:`refusal` first); False when it was dropped."""
        ms = len(pcm) / 2 / INPUT_RATE * 1000.0
        if self.closed or self._waiting_ms + ms > MAX_WAITING_MS:
            return False
        self._overrun = False
        self._waiting_ms += ms
        self._call(self._queue.put_nowait, pcm)
        return True

    def type(self, prompt: str) -> None:
        """A typed turn: the conversation's next user turn, after the audio queued before it."""
        if not self.closed:
            self._call(self._queue.put_nowait, prompt)

    def close(self) -> None:
        """No more audio: the conversation ends once it has taken what is queued."""
        if not self.closed:
            self.closed = True
            self._call(self._queue.put_nowait, _CLOSED)

    def _call(self, fn: Callable[[Any], None], item: Any) -> None:
        with self._lock:
            if self._loop is None:
                fn(item)  # nobody waits yet: the queue is the caller's alone
            elif not self._loop.is_closed():
                self._loop.call_soon_threadsafe(fn, item)

    def bind(self) -> None:
        """The running loop takes the audio from now on (puts from other threads reach it safely)."""
        with self._lock:
            self._loop = asyncio.get_running_loop()

    async def get(self) -> bytes | str | None:
        """The next audio (all that waits up to a typed turn, joined) or typed turn; None once closed.
        :meth:`bind` first."""
        item, self._held = self._held, None
        if item is None:
            item = await self._queue.get()
        if item is _CLOSED:
            self._held = _CLOSED  # every later call ends too
            return None
        if isinstance(item, str):
            return item
        chunks: list[bytes] = [item]
        while not self._queue.empty():
            following = self._queue.get_nowait()
            if not isinstance(following, bytes):
                self._held = following  # a typed turn or the end: the next call's
                break
            chunks.append(following)
        pcm = b"".join(chunks)
        self._waiting_ms = max(0.0, self._waiting_ms - len(pcm) / 2 / INPUT_RATE * 1000.0)
        return pcm


async def spoken_conversation(agent: BidiAgent, inbox: UserInbox) -> AsyncGenerator[Mapping[str, Any]]:
    """``agent`` (a ``BidiAgent`` on a ``KokoroCascade``) hearing ``inbox``: its events as the app's.

    ``listening_start`` first (the cascade is loaded: audio sent now is heard); the cascade's ``bidi_*``
    and own events (``user_speech``, ``listening_error``, ``speech_error``) as they are; its audio as
    ``audio_chunk`` events (``pcm_s16le``), which ``/ws`` frames as every turn's audio. It ends when the
    inbox closes.
    """
    from strands.bidi.types import AudioDelta

    out: asyncio.Queue[Any] = asyncio.Queue()

    async def feed() -> None:
        while (item := await inbox.get()) is not None:
            await agent.send(
                item if isinstance(item, str) else AudioDelta(format="pcm", source={"bytes": item})
            )
        out.put_nowait(_CLOSED)

    async def receive() -> None:
        try:
            async for event in agent.receive():
                out.put_nowait(event)
        except Exception as exc:
            out.put_nowait(exc)
        out.put_nowait(_CLOSED)

    inbox.bind()
    await agent.start()
    feeding = asyncio.create_task(feed(), name="voice-feed")
    receiving = asyncio.create_task(receive(), name="voice-receive")
    seq = 0
    try:
        cascade = cast("KokoroCascade", agent.model)
        output_rate = cascade.get_audio_config()["output"]["sample_rate"]
        yield {"type": "listening_start", "sample_rate": INPUT_RATE, "output_sample_rate": output_rate}
        while (event := await out.get()) is not _CLOSED:
            if isinstance(event, BaseException):
                raise event
            kind = event.get("type")
            if kind == "bidi_audio_delta":
                yield {
                    "type": "audio_chunk",
                    "seq": seq,
                    "sentence": 0,
                    "audio": event["audio"],
                    "format": "pcm_s16le",
                    "sample_rate": event["sample_rate"],
                    "channels": event.get("channels", 1),
                }
                seq += 1
            elif kind in PASSED_EVENTS:
                yield dict(event)
    finally:
        for task in (feeding, receiving):
            task.cancel()
        for task in (feeding, receiving):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await agent.stop()
