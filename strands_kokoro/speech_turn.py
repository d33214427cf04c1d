"""One spoken agent turn: the agent, the chunker and the session receiver in ONE task group.

Why this shape (DESIGN §5): the model's text must reach the listener as audio while the model is still
writing, and the consumer must see text and audio interleaved in true arrival order. So three tasks
share one ordered event queue:

- the agent task drives ``agent.stream_async``; the Strands middleware tap (in ``speech.py``) calls
  :meth:`SpeechTurn.on_text` for every text delta (a ``text_delta`` event + text for the chunker) and
  :meth:`SpeechTurn.end_segment` at the end of every model call;
- the speaker task cleans and chunks the text and sends each sentence the moment it is complete
  (``bidi``), or the whole answer at the end (``batch``);
- the receiver task owns the session: it opens it, turns its frames into ``audio_chunk`` /
  ``sentence_complete`` events and, when the connection drops, reopens it and re-sends what was not
  yet fully spoken.

Reconnect rule (nothing said twice, nothing skipped): a sentence whose ``synthesis_complete`` arrived is
never re-sent. A sentence that was cut mid-audio is re-sent whole, and the first ``emitted_bytes`` of its
new audio are dropped: Kokoro's durations are deterministic, so the re-synthesized audio has the same
length and the listener hears the sentence continue where it broke off (at worst a click at the seam).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from strands_kokoro import events
from strands_kokoro.chunker import IncrementalSentenceChunker
from strands_kokoro.events import Event
from strands_kokoro.protocol import DEFAULT_SAMPLE_RATE, MAX_TEXT_CHARS, audio_ms
from strands_kokoro.sessions.base import (
    AudioData,
    ServerError,
    SessionClosedError,
    SessionEvent,
    SpeechRequest,
    SpeechSession,
    SynthesisCompleted,
    SynthesisStarted,
)
from strands_kokoro.speech_text import SpeechTextFilter, clean_for_speech

SpeechMode = Literal["bidi", "batch"]
SessionFactory = Callable[[], SpeechSession]

FLUSH_WAIT_S = 5.0  # a tool waits at most this long for the text before it to reach the session


@dataclass(frozen=True, slots=True)
class SpeechOptions:
    """Everything a turn needs to know about how to speak (set once on ``KokoroSpeech``)."""

    mode: SpeechMode = "bidi"
    voice: str | None = None
    speed: float | None = None
    sample_rate: int | None = None
    lang: str | None = None
    first_chunk_words: int | None = 6
    max_chars: int | None = 350
    reconnect_attempts: int = 2
    reconnect_backoff_s: float = 0.25


@dataclass(eq=False, slots=True)
class _Sentence:
    index: int
    text: str
    request_id: str
    sent_on: int = -1  # connection generation it was last sent on
    emitted_bytes: int = 0  # audio already handed to the consumer (kept across reconnects)
    received_bytes: int = 0  # audio received in the current attempt
    sample_rate: int = DEFAULT_SAMPLE_RATE
    first_audio_ms: float | None = None


@dataclass(eq=False, slots=True)
class _Flush:
    """End of a model call: speak everything buffered; ``done`` lets a tool wait until it is sent."""

    done: asyncio.Event = field(default_factory=asyncio.Event)


def split_for_request(text: str, limit: int = MAX_TEXT_CHARS) -> list[str]:
    """Split a long batch answer at whitespace so each piece fits one request."""
    pieces: list[str] = []
    while len(text) > limit:
        cut = text.rfind(" ", 0, limit)
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut].strip())
        text = text[cut:]
    if text.strip():
        pieces.append(text.strip())
    return pieces


class SpeechTurn:
    """State and tasks of one turn; ``events`` is the ordered output queue (``None`` ends it)."""

    def __init__(self, *, request_id: str, options: SpeechOptions, open_session: SessionFactory) -> None:
        self.request_id = request_id
        self.options = options
        self._open_session = open_session
        self.events: asyncio.Queue[Event | None] = asyncio.Queue()
        self.result: Any = None
        self._text: asyncio.Queue[str | _Flush | None] = asyncio.Queue()
        self._last_flush: _Flush | None = None
        self._pending: list[_Sentence] = []
        self._by_id: dict[str, _Sentence] = {}
        self._send_lock = asyncio.Lock()
        self._session: SpeechSession | None = None
        self._generation = 0
        self._next_sentence = 0
        self._input_done = False
        self._failed = False
        self._muted = False
        self._task_group: asyncio.TaskGroup | None = None
        self._loop = asyncio.get_running_loop()
        self._t0 = time.perf_counter()
        self._text_seq = 0
        self._audio_seq = 0
        self._first_text_ms: float | None = None
        self._first_audio_ms: float | None = None
        self._audio_ms = 0.0

    # ------------------------------------------------------------------------------------ helpers

    def _now_ms(self) -> float:
        return (time.perf_counter() - self._t0) * 1000.0

    def _emit(self, event: Event) -> None:
        self.events.put_nowait(event)

    def _finished(self) -> bool:
        return self._input_done and not self._pending

    def _request(self, sentence: _Sentence) -> SpeechRequest:
        o = self.options
        return SpeechRequest(sentence.request_id, sentence.text, o.voice, o.speed, o.sample_rate, o.lang)

    # ------------------------------------------------------------------- called from the agent task

    def on_text(self, text: str) -> None:
        """A text delta from the model: shown now, spoken once its sentence is complete."""
        if self._first_text_ms is None:
            self._first_text_ms = self._now_ms()
        self._emit(events.text_delta(self._text_seq, text))
        self._text_seq += 1
        self._text.put_nowait(text)

    def end_segment(self) -> None:
        """The model call ended (maybe before a tool call): speak what is buffered now."""
        self._last_flush = _Flush()
        self._text.put_nowait(self._last_flush)

    async def wait_flushed(self) -> None:
        """Wait until the text of the last model call was handed to the session (called before tools)."""
        flush = self._last_flush
        if flush is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(flush.done.wait(), FLUSH_WAIT_S)

    # ---------------------------------------------------------------------------------- interrupt

    def interrupt(self) -> None:
        """Barge-in: stop speaking now, drop every unspoken sentence; the text goes on (thread-safe)."""
        try:
            same_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            same_loop = False
        if same_loop:
            self._interrupt()
        else:
            self._loop.call_soon_threadsafe(self._interrupt)

    def _interrupt(self) -> None:
        if self._muted or self._task_group is None:
            return
        self._muted = True
        dropped = len(self._pending)
        self._pending.clear()
        self._by_id.clear()
        self._emit(events.speech_interrupted(dropped, self._now_ms()))
        with contextlib.suppress(RuntimeError):  # the group is already finishing: nothing in flight
            self._task_group.create_task(self._cancel_in_flight(), name="kokoro-cancel")

    async def _cancel_in_flight(self) -> None:
        session = self._session
        if session is not None:
            with contextlib.suppress(SessionClosedError):
                await session.cancel()
        await self._close_if_finished()

    # ------------------------------------------------------------------------------------ the run

    async def run(self, agent_stream: AsyncIterator[Any]) -> None:
        """Drive the turn to its end; always finishes with ``agent_end`` and the ``None`` sentinel."""
        self._emit(events.agent_start(self.request_id, self.options.mode))
        try:
            async with asyncio.TaskGroup() as task_group:
                self._task_group = task_group
                task_group.create_task(self._drive_agent(agent_stream), name="kokoro-agent")
                task_group.create_task(self._speak(), name="kokoro-speaker")
                task_group.create_task(self._receive(), name="kokoro-receiver")
        finally:
            self._task_group = None
            self._emit(
                events.agent_end(
                    self.request_id,
                    self.options.mode,
                    first_text_ms=self._first_text_ms,
                    first_audio_ms=self._first_audio_ms,
                    total_ms=self._now_ms(),
                    audio_ms=self._audio_ms,
                    chunks=self._audio_seq,
                )
            )
            self.events.put_nowait(None)

    async def _drive_agent(self, agent_stream: AsyncIterator[Any]) -> None:
        try:
            async for event in agent_stream:
                if isinstance(event, dict) and "result" in event:
                    self.result = event["result"]
        except Exception as exc:
            # Never str(exc): it can carry internals (or a bare key) that look like a message.
            self._emit(events.error("agent_failed", f"the agent turn failed ({type(exc).__name__})"))
        finally:
            self._text.put_nowait(None)  # the tap's last flush is already queued before this
            if (aclose := getattr(agent_stream, "aclose", None)) is not None:
                await aclose()

    # --------------------------------------------------------------------------------- the speaker

    async def _speak(self) -> None:
        o = self.options
        chunker = IncrementalSentenceChunker(first_chunk_words=o.first_chunk_words, max_chars=o.max_chars)
        text_filter = SpeechTextFilter()
        whole: list[str] = []
        try:
            while (item := await self._text.get()) is not None:
                if isinstance(item, _Flush):
                    if o.mode == "bidi":
                        await self._submit_all(chunker.feed(text_filter.flush()))
                        await self._submit_all([chunker.flush() or ""])
                    item.done.set()
                elif o.mode == "batch":
                    whole.append(item)
                else:
                    await self._submit_all(chunker.feed(text_filter.feed(item)))
            if o.mode == "bidi":
                await self._submit_all([*chunker.feed(text_filter.flush()), chunker.flush() or ""])
            else:
                await self._submit_all(split_for_request(clean_for_speech("".join(whole))))
        finally:
            self._input_done = True
            # A tool may be waiting on a flush this task never reached (it failed): release it.
            while not self._text.empty():
                if isinstance(leftover := self._text.get_nowait(), _Flush):
                    leftover.done.set()
            await self._close_if_finished()

    async def _submit_all(self, texts: list[str]) -> None:
        for text in texts:
            await self._submit(text)

    async def _submit(self, text: str) -> None:
        text = text.strip()
        if not text or self._failed or self._muted:
            return
        sentence = _Sentence(self._next_sentence, text, f"{self.request_id}-{self._next_sentence}")
        self._next_sentence += 1
        self._pending.append(sentence)
        self._by_id[sentence.request_id] = sentence
        async with self._send_lock:
            session = self._session
            if session is None or sentence.sent_on == self._generation:
                return  # not connected yet: the receiver sends it when the session opens
            try:
                await session.send(self._request(sentence))
                sentence.sent_on = self._generation
            except SessionClosedError:
                pass  # the receiver sees the drop, reconnects and re-sends

    async def _close_if_finished(self) -> None:
        session = self._session
        if session is not None and self._finished():
            with contextlib.suppress(SessionClosedError):
                await session.close()

    # -------------------------------------------------------------------------------- the receiver

    async def _receive(self) -> None:
        retries_left = self.options.reconnect_attempts
        ever_connected = False
        while not self._finished():
            try:
                async with self._open_session() as session:
                    await self._attach(session)
                    ever_connected = True
                    events = session.events()
                    try:
                        async for event in events:
                            await self._handle(event)
                    finally:
                        # Close the iterator here, not in a GC finalizer task that outlives the turn.
                        if (aclose := getattr(events, "aclose", None)) is not None:
                            await aclose()
                return
            except SessionClosedError as exc:
                async with self._send_lock:
                    self._session = None
                if self._finished():
                    return
                if retries_left == 0:
                    self._give_up(ever_connected, exc)
                    return
                attempt = self.options.reconnect_attempts - retries_left
                retries_left -= 1
                await asyncio.sleep(self.options.reconnect_backoff_s * 2**attempt)

    async def _attach(self, session: SpeechSession) -> None:
        """A session opened: (re-)send every sentence not yet fully spoken, in order, then go live."""
        async with self._send_lock:
            self._generation += 1
            for sentence in list(self._pending):
                sentence.received_bytes = 0
                await session.send(self._request(sentence))
                sentence.sent_on = self._generation
            self._session = session
        await self._close_if_finished()

    def _give_up(self, ever_connected: bool, exc: SessionClosedError) -> None:
        self._failed = True
        self._pending.clear()
        self._by_id.clear()
        attempts = self.options.reconnect_attempts + 1
        if ever_connected:
            code, what = "connection_lost", "the speech connection dropped and was not restored"
        else:
            code, what = "speech_unavailable", "could not reach the speech endpoint"
        detail = getattr(exc, "code", None) or str(exc)
        self._emit(events.speech_error(code, f"{what} after {attempts} tries ({detail}); the text goes on"))

    async def _handle(self, event: SessionEvent) -> None:
        match event:
            case SynthesisStarted(request_id=request_id, sample_rate=rate):
                if (sentence := self._by_id.get(request_id)) is not None:
                    sentence.received_bytes = 0
                    sentence.sample_rate = rate
            case AudioData(request_id=request_id, pcm=pcm):
                if (sentence := self._by_id.get(request_id)) is not None and not self._muted:
                    self._on_audio(sentence, pcm)
            case SynthesisCompleted(request_id=request_id):
                if (sentence := self._by_id.pop(request_id, None)) is not None:
                    self._pending.remove(sentence)
                    spoken_ms = audio_ms(sentence.emitted_bytes, sentence.sample_rate)
                    self._emit(
                        events.sentence_complete(
                            sentence.index, sentence.text, spoken_ms, sentence.first_audio_ms
                        )
                    )
                    await self._close_if_finished()
            case ServerError(request_id=request_id, code=code, message=message):
                if not self._muted:
                    self._emit(events.speech_error(code, message))
                if request_id is not None and (sentence := self._by_id.pop(request_id, None)) is not None:
                    self._pending.remove(sentence)
                    await self._close_if_finished()

    def _on_audio(self, sentence: _Sentence, pcm: bytes) -> None:
        start = sentence.received_bytes
        sentence.received_bytes += len(pcm)
        if sentence.received_bytes <= sentence.emitted_bytes:
            return  # already spoken before the connection dropped
        fresh = pcm[max(0, sentence.emitted_bytes - start) :]
        sentence.emitted_bytes += len(fresh)
        now = self._now_ms()
        if sentence.first_audio_ms is None:
            sentence.first_audio_ms = now
        if self._first_audio_ms is None:
            self._first_audio_ms = now
        self._audio_ms += audio_ms(len(fresh), sentence.sample_rate)
        self._emit(events.audio_chunk(self._audio_seq, sentence.index, fresh, sentence.sample_rate))
        self._audio_seq += 1
