"""One bidirectional WebSocket session (architecture §3): reader, synthesizer and sender in one task group.

The reader parses every frame, answers bad ones at once and queues requests; the synthesizer renders
them in order (request k+1 while k's audio is sent); the sender writes in queue order. A ``cancel`` bumps
the session's epoch: queued requests and stale audio frames are dropped, the request in flight stops at
its next segment, and every cancel gets its own ``cancelled``. The session ends on ``close`` (queued work
first) or a disconnect (a barge-in). Queued requests, audio and unsent errors are bounded
(:mod:`tts_container.routes.session_queue`); a client whose send is stuck ``STALLED_SEND_S`` behind its
errors is closed 1008 ``error_flood``. Refusals keep the request order. Details: docs/architecture.md,
"The WebSocket session".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid

from starlette.websockets import WebSocket, WebSocketDisconnect

from strands_kokoro.protocol import (
    MAX_QUEUED_REQUESTS,
    WIRE_AUDIO_FORMATS,
    Cancel,
    Cancelled,
    Close,
    ControlFrame,
    ErrorCode,
    ProtocolError,
    ServerError,
    SessionStarted,
    SynthesisCompleted,
    SynthesisStarted,
    SynthesizeRequest,
    audio_ms,
    parse_client_message,
)
from tts_container.reporting.counters import SessionCounters
from tts_container.reporting.metric_lines import log_completed
from tts_container.routes.session_queue import (
    CLOSE,
    END,
    Control,
    Finished,
    Job,
    Outbox,
    QueuedAudio,
    Refusal,
    RequestQueue,
)
from tts_container.scheduling.admission import Admission, enter
from tts_container.synthesis.synthesizer import Synthesizer
from tts_container.text.speakable import nothing_to_say

logger = logging.getLogger(__name__)

# Audio the synthesizer may run ahead of a slow reader before it waits (about 44 s at 24 kHz).
MAX_BUFFERED_AUDIO_BYTES = 2 * 1024 * 1024
# Error frames queued and not yet sent; at this many the reader waits for the sender.
MAX_UNREAD_ERRORS = 64
# A send to the client stuck this long (while errors pile up) means it does not read: error_flood.
STALLED_SEND_S = 5.0
# The 1008 close frame waits this long for such a client to take what was sent before it.
POLICY_CLOSE_WAIT_S = 30.0
POLICY_VIOLATION = 1008  # WebSocket close code


class _ClientGone(Exception):
    """The peer disconnected; the session's tasks stop."""


class _ErrorFlood(Exception):
    """The client keeps sending bad messages and does not read the errors: the session is closed."""


class _Ended(Exception):
    """The server closed the session after ``close`` (queued requests done); the reader stops."""


class Session:
    """State shared by the reader, synthesizer and sender of one connection."""

    def __init__(
        self, websocket: WebSocket, synthesizer: Synthesizer, counters: SessionCounters, admission: Admission
    ) -> None:
        self._ws = websocket
        self._synth = synthesizer
        self._counters = counters
        self._admission = admission
        self._listener = admission.listener()
        self._open = self._listener.requests  # accepted and not yet finished on the wire
        self._epoch = 0
        self._requests = RequestQueue()
        self._outbox = Outbox()
        self._closing = False  # the client said ``close``: only a cancel and the disconnect count now
        self._sent = asyncio.Event()  # set whenever a frame went out: the reader may have room again
        self._sending_since: float | None = None  # when the send in progress began

    async def run(self) -> None:
        await self._ws.accept()
        self._counters.active += 1
        self._counters.opened += 1
        try:
            started = SessionStarted(self._synth.engine.name, self._synth.first_audio_ms, self._synth.rtf)
            await self._send(started.to_wire())
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._synthesize_loop())
                tasks.create_task(self._send_loop())
                await self._read_loop()
        except* _Ended:
            pass
        except* _ClientGone:
            logger.info("client disconnected")
            self._drop_open()
        except* _ErrorFlood:
            logger.warning("closing a session whose client sends bad messages without reading the errors")
            self._counters.error_floods += 1
            self._drop_open()
            await self._close_for_policy("error_flood: bad messages sent while errors went unread")
        finally:
            self._counters.active -= 1
            self._admission.leave(self._listener)

    def _drop_open(self) -> None:
        """The session ended under its requests: those not finished on the wire count as cancelled."""
        self._counters.requests_cancelled += len(self._open)
        self._open.clear()

    async def _close_for_policy(self, reason: str) -> None:
        """Close with 1008 once the client takes the frames before it; one that never reads: bounded wait."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(POLICY_CLOSE_WAIT_S):
                await self._ws.close(POLICY_VIOLATION, reason)

    # ------------------------------------------------------------------------------------- reader

    async def _read_loop(self) -> None:
        while True:
            if self._unread_errors() >= MAX_UNREAD_ERRORS:
                await self._wait_for_room()
            message = await self._ws.receive()
            if message["type"] == "websocket.disconnect":
                raise _ClientGone
            payload = message.get("bytes")
            try:
                self._take(message.get("text", "") if payload is None else payload)
            except Exception:  # a fault of the server's own: this message is answered, the session goes on
                logger.exception("could not take a client message")
                failed = ServerError(None, ErrorCode.INTERNAL_ERROR, "the server failed to read this message")
                self._error(failed)

    def _take(self, payload: bytes | str) -> None:
        """One client message: a cancel, a close, a request, or a coded refusal of it."""
        try:
            parsed = parse_client_message(payload)
        except ProtocolError as exc:  # named requests are refused in order; the rest answered at once
            if not self._closing:
                (self._error if exc.request_id is None else self._refuse)(exc.frame())
            return
        if isinstance(parsed, Cancel):
            self._cancel()
        elif self._closing:
            return  # after close, only a cancel is acted on
        elif isinstance(parsed, Close):
            self._closing = True
            self._requests.put(CLOSE)
        else:
            self._accept(parsed)

    def _accept(self, request: SynthesizeRequest) -> None:
        """Queue a request, or refuse it in its place, in the order every route checks
        (:mod:`tts_container.scheduling.admission`): what cannot be spoken, a full queue, and (the first
        request of a new answer) a server serving all the listeners it can."""
        job = enter(
            self._synth,
            self._admission,
            self._listener,
            request,
            audio_format=request.format,
            entry=lambda spoken: Job(spoken, request.request_id or uuid.uuid4().hex, self._epoch),
            room=self._queue_full,
        )
        if isinstance(job, ServerError):
            self._refuse(job)
        else:
            self._requests.put(job)

    def _queue_full(self, request: SynthesizeRequest) -> ServerError | None:
        """The session's own limit: ``MAX_QUEUED_REQUESTS`` requests waiting for the synthesizer."""
        if self._requests.jobs < MAX_QUEUED_REQUESTS:
            return None
        message = f"{MAX_QUEUED_REQUESTS} requests are already queued in this session; retry later"
        return ServerError(request.request_id, ErrorCode.OVERLOADED, message)

    async def _wait_for_room(self) -> None:
        """Read nothing more until the sender has room for errors; ``_ErrorFlood`` if the client stalls it."""
        while self._unread_errors() >= MAX_UNREAD_ERRORS:
            self._sent.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STALLED_SEND_S):
                    await self._sent.wait()
                continue
            since = self._sending_since
            if since is not None and time.monotonic() - since >= STALLED_SEND_S:
                raise _ErrorFlood
            # Nothing stuck: the errors wait for earlier requests' audio (refusals in order). Keep waiting.

    def _unread_errors(self) -> int:
        """Error and ``cancelled`` frames (refusals included) queued and not yet sent."""
        return self._requests.refusals + self._outbox.replies

    def _refuse(self, frame: ServerError) -> None:
        """A request's refusal, answered in its place in the request order (after the audio of the
        requests before it)."""
        self._requests.put(Refusal(frame, self._epoch))

    def _error(self, frame: ServerError) -> None:
        """An error about a message that is not a request: answered at once."""
        self._outbox.put(Control(frame, None))

    def _cancel(self) -> None:
        """Drop queued requests and queued audio; the request in flight stops at its next segment.

        The ``cancelled`` answer is queued as a reply no later cancel discards (epoch ``None``), and
        counts with the unsent errors, so a client that floods cancels without reading is throttled.
        """
        self._epoch += 1
        dropped = len(self._open)
        self._open.clear()
        self._listener.stop()
        self._counters.requests_cancelled += dropped
        requests = self._requests.drain()
        # Answers already given still go out, just before ``cancelled``: unsent replies, then refusals.
        outbox = self._outbox.drain()
        kept = [item for item in outbox if isinstance(item, Control) and item.epoch is None]
        refusals = [Control(item.frame, None) for item in requests if isinstance(item, Refusal)]
        for item in [*kept, *refusals]:
            self._outbox.put(item)
        self._control(Cancelled(dropped), epoch=None)
        if END in outbox:  # the synthesizer already took ``close``: answered, then the session ends
            self._outbox.put(END)
        elif CLOSE in requests:  # close still queued behind requests: the session still ends
            self._requests.put(CLOSE)

    def _control(self, frame: ControlFrame, epoch: int | None = None) -> None:
        self._outbox.put(Control(frame, epoch))

    # ------------------------------------------------------------------------------------- synthesizer

    async def _synthesize_loop(self) -> None:
        while True:
            job = await self._requests.get()
            if job is CLOSE:
                self._outbox.put(END)
                return
            if isinstance(job, Refusal):
                self._outbox.put(Control(job.frame, None))
                continue
            assert isinstance(job, Job)
            if job.epoch == self._epoch:
                await self._synthesize(job)

    async def _synthesize(self, job: Job) -> None:
        rate, fmt = job.request.sample_rate, WIRE_AUDIO_FORMATS[job.request.format]
        self._control(SynthesisStarted(job.request_id, rate, format=fmt), epoch=job.epoch)
        frames = self._synth.pcm_frames(
            job.request, job.words, listener=self._listener, received_at=job.received_at
        )
        try:
            async for pcm in frames:
                self._counters.audio_made_ms += audio_ms(len(pcm), job.request.sample_rate)
                await self._outbox.room_for_audio(MAX_BUFFERED_AUDIO_BYTES)  # a cancel drains it
                if job.epoch != self._epoch:
                    return  # cancelled: stop at this segment boundary (what it made counts as unsent)
                self._outbox.put(QueuedAudio(job, pcm))
        except Exception:
            logger.exception("engine failed on a request of %d characters", len(job.request.text))
            self._outbox.put(Finished(job, failed=True))
            return
        finally:
            await frames.aclose()
        self._outbox.put(Finished(job))

    # ------------------------------------------------------------------------------------- sender

    async def _send_loop(self) -> None:
        while True:
            item = await self._outbox.get()
            if item is END:
                try:
                    await self._ws.close(1000)
                except (WebSocketDisconnect, OSError, RuntimeError) as exc:
                    raise _ClientGone from exc
                raise _Ended
            if isinstance(item, Control):
                if item.epoch is None or item.epoch == self._epoch:
                    await self._send(item.frame.to_wire())
            elif isinstance(item, QueuedAudio):
                await self._send_audio(item)
            elif isinstance(item, Finished) and item.job.epoch == self._epoch:
                if not item.failed and item.job.encoder is not None and (tail := item.job.encoder.finish()):
                    item.job.chunks += 1
                    await self._send(tail)  # the end of the request's stream (Ogg's EOS page)
                await self._send(self._finish(item).to_wire())

    async def _send_audio(self, item: QueuedAudio) -> None:
        if item.job.epoch != self._epoch:
            return
        job = item.job
        if job.first_audio_at is None:
            job.first_audio_at = time.perf_counter()
        job.audio_bytes += len(item.pcm)
        if words := job.unsent_words():  # captions may show a word as soon as its audio is heard
            await self._send(words.to_wire())
        payload = job.encoded(item.pcm)
        if payload:  # a compressed stream may hold less than a frame until the next segment
            job.chunks += 1
            await self._send(payload)
        self._counters.audio_sent_ms += audio_ms(len(item.pcm), job.request.sample_rate)

    def _finish(self, item: Finished) -> ServerError | SynthesisCompleted:
        job = item.job
        self._open.discard(job)
        if item.failed:
            return ServerError(job.request_id, ErrorCode.ENGINE_FAILED, "synthesis failed on the server")
        if job.chunks == 0:  # the G2P had no sound for it ("$" alone): the same answer as refused text
            return nothing_to_say(job.request_id)
        self._counters.requests_completed += 1
        now = time.perf_counter()
        first = None if job.first_audio_at is None else (job.first_audio_at - job.received_at) * 1000
        complete = SynthesisCompleted(
            job.request_id,
            audio_ms=_audio_ms(job),
            chunks=job.chunks,
            first_audio_ms=first,
            elapsed_ms=(now - job.received_at) * 1000,
            words=tuple(job.words),
        )
        log_completed(complete, route="ws")
        return complete

    async def _send(self, data: str | bytes) -> None:
        self._sending_since = time.monotonic()
        try:
            if isinstance(data, bytes):
                await self._ws.send_bytes(data)
            else:
                await self._ws.send_text(data)
        except (WebSocketDisconnect, OSError, RuntimeError) as exc:
            raise _ClientGone from exc
        finally:
            self._sending_since = None
        self._sent.set()


def _audio_ms(job: Job) -> float:
    return audio_ms(job.audio_bytes, job.request.sample_rate)
