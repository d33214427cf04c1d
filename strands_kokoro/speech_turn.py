"""One spoken agent turn: the agent, the speaker and the session receiver in ONE task group.

Why this shape (DESIGN §5): the model's text must reach the listener as audio while the model is still
writing, and the consumer must see text and audio interleaved in true arrival order. So three tasks
share one ordered event queue:

- the agent task drives ``agent.stream_async``; the Strands middleware tap (in ``speech.py``) calls
  :meth:`SpeechTurn.on_text` for every text delta (a ``text_delta`` event + text for the speaker) and
  :meth:`SpeechTurn.end_segment` at the end of every model call;
- the speaker task filters the text for speech, finds its sentences, and lets the
  :class:`~strands_kokoro.pacer.SpeechPacer` decide where to cut it into requests and when to send them
  (``bidi``), or sends the whole answer at the end (``batch``, the baseline: no pacer);
- the receiver task owns the session: it opens it, turns its frames into ``audio_chunk`` /
  ``sentence_complete`` events, tells the pacer what arrived (which wakes the speaker) and, when the
  connection drops, reopens it and re-sends what was not yet fully spoken.

What each request owes, the order of its events and the reconnect rule (nothing said twice, nothing
skipped) are :mod:`strands_kokoro.request_ledger`'s.

Speech never ends the text answer: a session that cannot be opened, a transport that fails, a server
that refuses a request all become ``speech_error`` events (coded, in words; details go to the log) and
the agent goes on writing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from strands_kokoro.chunker import IncrementalSentenceChunker
from strands_kokoro.events import (
    Event,
    agent_end,
    agent_start,
    audio_chunk,
    error,
    sentence_complete,
    speech_error,
    speech_interrupted,
    text_delta,
)
from strands_kokoro.pacer import MAX_IN_FLIGHT_URGENT, PacingPolicy, SpeechPacer
from strands_kokoro.protocol import (
    DEFAULT_LANG,
    DEFAULT_SAMPLE_RATE,
    DEFAULT_VOICE,
    MAX_TEXT_CHARS,
    AudioData,
    ServerError,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    audio_ms,
)
from strands_kokoro.request_ledger import RequestLedger, TurnRequest
from strands_kokoro.sessions.base import SessionClosedError, SessionEvent, SpeechSession
from strands_kokoro.speech_text import SpeechTextFilter, clean_for_speech

logger = logging.getLogger(__name__)

SpeechMode = Literal["bidi", "batch"]
SessionFactory = Callable[[], SpeechSession]

FLUSH_WAIT_S = 5.0  # a tool waits at most this long for the text before it to reach the session
MAX_REFUSALS = 5  # an ``overloaded`` request is re-sent this many times before it counts as failed
SETUP_FAILURES = {  # what a listener's app can say when a session cannot even be set up
    "unknown_endpoint_scheme": "the speech endpoint is not a ws://, http(s)://, sagemaker: or "
    "sagemaker-batch: address",
    "bad_endpoint": "the speech endpoint does not name a SageMaker endpoint",
    "bad_endpoint_option": "the speech endpoint has an option its session does not take",
    "missing_dependency": "speech over SageMaker needs the 'sagemaker' extra installed",
}


@dataclass(frozen=True, slots=True)
class SpeechOptions:
    """Everything a turn needs to know about how to speak (set once on ``KokoroSpeech``)."""

    mode: SpeechMode = "bidi"
    voice: str = DEFAULT_VOICE
    speed: float = 1.0
    sample_rate: int = DEFAULT_SAMPLE_RATE
    lang: str = DEFAULT_LANG
    pacing: PacingPolicy = "latency"
    max_chars: int | None = 350
    tool_filler: str | None = "One moment."
    tool_filler_after_s: float = 1.0
    reconnect_attempts: int = 2
    reconnect_backoff_s: float = 0.25


@dataclass(eq=False, slots=True)
class _Flush:
    """End of a model call: ``done`` is set once its text is on the wire (sent on an open session); a
    tool that is about to run waits for it (``awaited``), which makes the speaker send all of it."""

    done: asyncio.Event = field(default_factory=asyncio.Event)
    awaited: bool = False


_WAKE: Final = object()  # something the pacer depends on changed: decide again


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
    """State and tasks of one turn; ``outbox`` is the ordered event queue (``None`` ends it)."""

    def __init__(self, *, request_id: str, options: SpeechOptions, open_session: SessionFactory) -> None:
        self.request_id = request_id
        self.options = options
        self._open_session = open_session
        self.outbox: asyncio.Queue[Event | None] = asyncio.Queue()
        self.result: Any = None
        self._inbox: asyncio.Queue[str | _Flush | object | None] = asyncio.Queue()
        self._last_flush: _Flush | None = None
        self._pacer = SpeechPacer(policy=options.pacing)
        self._ledger = RequestLedger(self._play)
        self._send_lock = asyncio.Lock()
        self._session: SpeechSession | None = None
        self._generation = 0
        self._requests = 0
        self._input_done = False
        self._failed = False
        self._muted = False
        # ``smooth`` pacing: audio events wait here until the predicted schedule has no stall.
        self._playing = options.pacing == "latency"
        self._held: list[Event] = []
        self._held_ms = 0.0
        self._task_group: asyncio.TaskGroup | None = None
        self._fillers: dict[str, asyncio.Task[None]] = {}  # tool use id -> its pending filler
        self._progress = asyncio.Event()  # set whenever a request completes or fails
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
        if event["type"] == "audio_chunk":  # numbered as they go out (a held one may overtake none)
            event["seq"] = self._audio_seq
            self._audio_seq += 1
        self.outbox.put_nowait(event)

    def _wake(self) -> None:
        self._inbox.put_nowait(_WAKE)

    def _finished(self) -> bool:
        return self._input_done and not self._ledger.pending

    def _wire_request(self, request: TurnRequest) -> SynthesizeRequest:
        o = self.options
        return SynthesizeRequest(request.text, request.request_id, o.voice, o.speed, o.sample_rate, o.lang)

    # ------------------------------------------------------------------- called from the agent task

    def on_text(self, text: str) -> None:
        """A text delta from the model: shown now, spoken once the pacer cuts it into a request."""
        if self._first_text_ms is None:
            self._first_text_ms = self._now_ms()
        self._emit(text_delta(self._text_seq, text))
        self._text_seq += 1
        self._inbox.put_nowait(text)

    def end_segment(self) -> None:
        """The model call ended (maybe before a tool call): its last sentence is complete."""
        self._last_flush = _Flush()
        self._inbox.put_nowait(self._last_flush)

    async def wait_flushed(self) -> None:
        """Hand the text of the last model call to the session now and wait until it is (before tools)."""
        flush = self._last_flush
        if flush is not None:
            flush.awaited = True
            self._wake()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(flush.done.wait(), FLUSH_WAIT_S)

    # -------------------------------------------------------------------------------------- tools

    def tool_started(self, tool_use_id: str) -> None:
        """A tool runs now (the text before it was handed over): say the filler if it runs long."""
        o = self.options
        if o.mode != "bidi" or o.tool_filler is None or self._task_group is None or self._muted:
            return
        with contextlib.suppress(RuntimeError):  # the turn is finishing: nothing to fill
            self._fillers[tool_use_id] = self._task_group.create_task(
                self._filler(o.tool_filler, self._requests), name="kokoro-tool-filler"
            )

    def tool_finished(self, tool_use_id: str) -> None:
        if (filler := self._fillers.pop(tool_use_id, None)) is not None:
            filler.cancel()

    async def _filler(self, text: str, requests_before: int) -> None:
        """Wait until the audio of the text before the tool has all arrived and played, then
        ``tool_filler_after_s`` more; then say the filler (unless the tool returned: cancelled)."""
        while any(request.index < requests_before for request in self._ledger.pending):
            self._progress.clear()
            await self._progress.wait()
        silence_from_ms = max(self._now_ms(), self._pacer.play_end_ms or 0.0)
        await asyncio.sleep((silence_from_ms - self._now_ms()) / 1000 + self.options.tool_filler_after_s)
        if not (self._muted or self._failed):
            await self._submit(text, None)

    # ---------------------------------------------------------------------------------- interrupt

    def interrupt(self) -> None:
        """Barge-in: stop speaking now, drop every unspoken request; the text goes on (thread-safe)."""
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
        dropped = len(self._ledger.pending)
        self._forget_requests()
        self._held.clear()
        self._emit(speech_interrupted(dropped, self._now_ms()))
        self._wake()
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
        self._emit(agent_start(self.request_id, self.options.mode))
        try:
            async with asyncio.TaskGroup() as task_group:
                self._task_group = task_group
                task_group.create_task(self._drive_agent(agent_stream), name="kokoro-agent")
                speak = self._speak_bidi if self.options.mode == "bidi" else self._speak_batch
                task_group.create_task(self._speaker(speak), name="kokoro-speaker")
                task_group.create_task(self._receive(), name="kokoro-receiver")
        finally:
            self._task_group = None
            self._start_playback()  # smooth pacing: nothing held back is lost
            self._emit(
                agent_end(
                    self.request_id,
                    self.options.mode,
                    first_text_ms=self._first_text_ms,
                    first_audio_ms=self._first_audio_ms,
                    total_ms=self._now_ms(),
                    audio_ms=self._audio_ms,
                    chunks=self._audio_seq,
                    requests=self._requests,
                    rtf=self._pacer.speed.rtf,
                    stall_ms=self._pacer.stall_ms,
                )
            )
            self.outbox.put_nowait(None)

    async def _drive_agent(self, agent_stream: AsyncIterator[Any]) -> None:
        try:
            await self._drive(agent_stream)
        finally:
            for filler in self._fillers.values():
                filler.cancel()
            self._fillers.clear()

    async def _drive(self, agent_stream: AsyncIterator[Any]) -> None:
        try:
            async for event in agent_stream:
                if isinstance(event, dict) and "result" in event:
                    self.result = event["result"]
        except Exception as exc:
            # Never str(exc): it can carry internals (or a bare key) that look like a message.
            logger.warning("agent turn %s failed", self.request_id, exc_info=True)
            self._emit(error("agent_failed", f"the agent turn failed ({type(exc).__name__})"))
        finally:
            self._inbox.put_nowait(None)  # the tap's last flush is already queued before this
            if (aclose := getattr(agent_stream, "aclose", None)) is not None:
                await aclose()

    # --------------------------------------------------------------------------------- the speaker

    async def _speaker(self, speak: Callable[[], Any]) -> None:
        try:
            await speak()
        finally:
            self._input_done = True
            self._release_flushes()
            # A tool may be waiting on a flush this task never reached (it failed): release it.
            while not self._inbox.empty():
                if isinstance(leftover := self._inbox.get_nowait(), _Flush):
                    leftover.done.set()
            await self._close_if_finished()

    async def _speak_bidi(self) -> None:
        """Text → speech filter → sentence chunker → pacer → session, until all text is sent."""
        chunker = IncrementalSentenceChunker(max_chars=self.options.max_chars)
        text_filter = SpeechTextFilter()
        flushes: list[_Flush] = []  # model calls whose text is in the pacer but not all sent yet
        writing = True
        while writing or self._pacer.unsent:
            item = await self._inbox.get()
            while True:  # take everything already queued: decide once per burst of tokens
                if isinstance(item, str):
                    clean = text_filter.feed(item)
                    self._pacer.write(clean, chunker.feed(clean), chunker.settled)
                elif isinstance(item, _Flush) or item is None:
                    clean = text_filter.flush()
                    self._pacer.write(clean, [*chunker.feed(clean), *chunker.flush()], None)
                    self._pacer.end_segment()
                    if isinstance(item, _Flush):
                        flushes.append(item)
                    else:
                        writing = False
                if self._inbox.empty():
                    break
                item = self._inbox.get_nowait()
            if self._failed or self._muted:
                self._pacer.drop_all()
            urgent = any(flush.awaited for flush in flushes)
            while (piece := self._pacer.next_piece(self._now_ms(), urgent=urgent)) is not None:
                await self._submit(piece.text, piece.predicted_buffer_ms, piece_id=piece.id)
            if not self._pacer.unsent and self._all_on_the_wire():
                for flush in flushes:
                    flush.done.set()
                flushes.clear()

    async def _speak_batch(self) -> None:
        """The baseline: the whole answer, cleaned, in as few requests as the server takes."""
        whole: list[str] = []
        while (item := await self._inbox.get()) is not None:
            if isinstance(item, str):
                whole.append(item)
            elif isinstance(item, _Flush):
                item.done.set()
        for text in split_for_request(clean_for_speech("".join(whole))):
            # Never more in flight than the server queues (it would refuse the rest).
            while len(self._ledger.pending) >= MAX_IN_FLIGHT_URGENT and not (self._failed or self._muted):
                await self._inbox.get()  # only wakes come after the end of the text
            await self._submit(text, None)

    def _all_on_the_wire(self) -> bool:
        """Has every request been sent on the current session (not just queued until it opens)?"""
        return all(request.sent_on == self._generation for request in self._ledger.pending)

    def _release_flushes(self) -> None:
        if self._last_flush is not None:
            self._last_flush.done.set()

    async def _submit(
        self, text: str, predicted_buffer_ms: float | None, *, piece_id: int | None = None
    ) -> None:
        """One request, in order; ``piece_id`` ties it to the pacer's piece (bidi text, not fillers)."""
        text = text.strip()
        if not text or self._failed or self._muted:
            return
        index = self._requests
        self._requests += 1
        request = TurnRequest(index, text, f"{self.request_id}-{index}", predicted_buffer_ms, piece_id)
        self._ledger.add(request)
        async with self._send_lock:
            session = self._session
            if session is None or request.sent_on == self._generation:
                return  # not connected yet: the receiver sends it when the session opens
            try:
                await session.send(self._wire_request(request))
                request.sent_on = self._generation
                self._pacer.sent(request.piece_id, self._now_ms())
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
                    received = session.events()
                    try:
                        async for event in received:
                            await self._handle(event)
                    finally:
                        # Close the iterator here, not in a GC finalizer task that outlives the turn.
                        if (aclose := getattr(received, "aclose", None)) is not None:
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
            except Exception as exc:
                # Not a drop: the session cannot be set up at all (an endpoint no session understands,
                # a missing extra, bad credentials...). Retrying will not help; the text goes on.
                async with self._send_lock:
                    self._session = None
                logger.warning("speech session for turn %s failed", self.request_id, exc_info=True)
                code = getattr(exc, "code", None)
                code = code if isinstance(code, str) and code in SETUP_FAILURES else "speech_setup_failed"
                what = SETUP_FAILURES.get(code, "the speech session could not be set up")
                self._fail_speech(code, f"{what}; the text goes on")
                return

    async def _attach(self, session: SpeechSession) -> None:
        """A session opened: (re-)send every request not yet fully spoken, in order, then go live."""
        async with self._send_lock:
            self._generation += 1
            for request in list(self._ledger.pending):
                request.received_bytes = 0
                await session.send(self._wire_request(request))
                request.sent_on = self._generation
                self._pacer.sent(request.piece_id, self._now_ms())
            self._session = session
        self._wake()  # a tool may be waiting for text that is only now on the wire
        await self._close_if_finished()

    def _give_up(self, ever_connected: bool, exc: SessionClosedError) -> None:
        attempts = self.options.reconnect_attempts + 1
        logger.warning("speech for turn %s gave up after %d tries: %s", self.request_id, attempts, exc)
        if ever_connected:
            code, what = "connection_lost", "the speech connection dropped and was not restored"
        else:
            code, what = "speech_unavailable", "could not reach the speech endpoint"
        # The transport's own code (e.g. SageMaker's ``no_credentials``) says why; never the URL.
        cause = getattr(exc, "code", None)
        because = f" ({cause})" if isinstance(cause, str) else ""
        self._fail_speech(code, f"{what} after {attempts} tries{because}; the text goes on")

    def _fail_speech(self, code: str, message: str) -> None:
        """Speech is over for this turn (the text goes on): say so once, drop what was owed."""
        self._failed = True
        self._forget_requests()
        self._wake()
        self._emit(speech_error(code, message))

    def _forget_requests(self) -> None:
        self._ledger.clear()
        self._pacer.drop_all()
        self._progress.set()

    async def _handle(self, event: SessionEvent) -> None:
        match event:
            case SynthesisStarted(request_id=request_id, sample_rate=rate):
                if (request := self._ledger.get(request_id)) is not None:
                    request.received_bytes = 0
                    request.sample_rate = rate
            case AudioData(request_id=request_id, pcm=pcm):
                if (request := self._ledger.get(request_id)) is not None and not self._muted:
                    self._on_audio(request, pcm)
            case SynthesisCompleted(request_id=request_id, words=words):
                if (request := self._ledger.settle(request_id)) is not None:
                    spoken_ms = audio_ms(request.emitted_bytes, request.sample_rate)
                    self._pacer.completed(request.piece_id, spoken_ms, self._now_ms())
                    complete = sentence_complete(
                        request.index,
                        request.text,
                        spoken_ms,
                        request.first_audio_ms,
                        predicted_buffer_ms=request.predicted_buffer_ms,
                        buffer_ms=request.buffer_ms,
                        words=words,
                    )
                    self._ledger.deliver(request, complete)
                    self._retire(request)
                    self._wake()
                    await self._close_if_finished()
            case ServerError(request_id=request_id, code="overloaded") if (
                refused := self._ledger.get(request_id)
            ) is not None:
                self._refused(refused)
            case ServerError(request_id=request_id, code=code, message=message):
                request = self._ledger.settle(request_id)
                if request is None:
                    if not self._muted:
                        self._play(speech_error(code, message))
                else:
                    if not self._muted:
                        self._ledger.deliver(request, speech_error(code, message))
                    self._pacer.failed(request.piece_id)
                    self._retire(request)
                    self._wake()
                    await self._close_if_finished()
        if not self._playing and (
            self._finished() or self._pacer.may_start_playback(self._held_ms, self._now_ms())
        ):
            self._start_playback()

    def _refused(self, request: TurnRequest) -> None:
        """The server's queue was full: send the request again shortly (its place in the order is kept:
        whatever the server accepted after it waits in the ledger until it is spoken)."""
        request.refusals += 1
        request.sent_on = -1
        if request.refusals > MAX_REFUSALS:
            message = f"the speech server stayed overloaded for {MAX_REFUSALS} retries"
            self._inbox.put_nowait(_WAKE)
            self._ledger.settle(request.request_id)
            self._pacer.failed(request.piece_id)
            self._ledger.deliver(request, speech_error("overloaded", message))
            self._retire(request)
            return
        if self._task_group is not None:
            with contextlib.suppress(RuntimeError):  # the group is finishing: nothing to re-send to
                self._task_group.create_task(self._resend(request), name="kokoro-resend")

    async def _resend(self, request: TurnRequest) -> None:
        await asyncio.sleep(self.options.reconnect_backoff_s * request.refusals)
        async with self._send_lock:
            session = self._session
            if (
                session is None
                or request.done
                or request.sent_on != -1
                or request not in self._ledger.pending
            ):
                return  # reconnected (and re-sent) meanwhile, or no longer wanted
            with contextlib.suppress(SessionClosedError):
                await session.send(self._wire_request(request))
                request.sent_on = self._generation
                self._pacer.sent(request.piece_id, self._now_ms())

    # ------------------------------------------------------------------------------ ordered output

    def _retire(self, request: TurnRequest) -> None:
        """The request owes nothing more: later requests' events go out, and waiters look again."""
        self._ledger.retire(request)
        self._progress.set()

    def _on_audio(self, request: TurnRequest, pcm: bytes) -> None:
        if not (fresh := request.fresh_audio(pcm)):
            return  # already spoken before the connection dropped
        fresh_ms = audio_ms(len(fresh), request.sample_rate)
        self._audio_ms += fresh_ms
        now = self._now_ms()
        buffered = self._pacer.audio(request.piece_id, fresh_ms, now, playing=self._playing)
        if self._playing:
            if request.first_audio_ms is None:
                request.first_audio_ms = now
                request.buffer_ms = buffered
            if self._first_audio_ms is None:
                self._first_audio_ms = now
        else:
            self._held_ms += fresh_ms
        self._ledger.deliver(request, audio_chunk(-1, request.index, fresh, request.sample_rate))

    # -------------------------------------------------------------------------------- smooth start

    def _play(self, event: Event) -> None:
        """Emit an audio-side event now, or hold it until playback starts (``smooth`` pacing)."""
        if self._playing:
            self._emit(event)
        else:
            self._held.append(event)

    def _start_playback(self) -> None:
        """``smooth``: the predicted schedule has no stall (or the turn ended): release what was held.

        First-audio times are when the consumer gets the audio, so held requests count from now.
        """
        if self._playing:
            return
        self._playing = True
        now = self._now_ms()
        self._pacer.start_playback(self._held_ms, now)
        if self._held_ms and self._first_audio_ms is None:
            self._first_audio_ms = now
        for event in self._held:
            if event["type"] == "sentence_complete" and event["audio_ms"]:
                event["first_audio_ms"] = round(now, 1)
            self._emit(event)
        self._held.clear()
        for request in self._ledger.pending:
            if request.emitted_bytes and request.first_audio_ms is None:
                request.first_audio_ms = now
