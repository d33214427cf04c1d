"""The agent app's WebSocket (``/ws``, AgentCore's bidirectional contract): turns in, events and audio out.

Frames are :mod:`agentcore_app.event_frames`'. One connection is one conversation (AgentCore's runtime
session id header, or a query parameter of that name); its requests run one at a time, the next ones
queued; a microphone (:mod:`agentcore_app.voice_input`) is one, its audio every binary frame that is no
JSON object, and a turn typed while it is open joins its conversation (``turn_end`` ``joined``). Turns run
on the SDK's worker loop, events come back through a bounded outbox, and a cancel or hang-up cancels the
turn's task and awaits it (architecture §10, "The WebSocket"). Every bad message gets a coded ``error``
frame and the connection goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from agentcore_app import event_frames
from agentcore_app.conversation.settings import check_session_id
from agentcore_app.errors import AppErrorCode, TurnRefused
from agentcore_app.event_frames import TurnStatus, WsFrame
from agentcore_app.payload import Turn, parse_turn
from agentcore_app.runtime_session import SESSION_HEADER
from agentcore_app.voice_input import Listening, parse_audio_start
from strands_kokoro.protocol import (
    MAX_REQUEST_ID_CHARS,
    ProtocolError,
    control_object,
    decode_text,
    json_type,
    utf8_encodable,
)

logger = logging.getLogger(__name__)

MAX_QUEUED_TURNS = 4  # turn requests waiting behind the running one
OUTBOX_EVENTS = 64  # events (their frames) on their way to the client; a turn waits when they are not read
POLICY_VIOLATION = 1008

TurnRunner = Callable[[Turn, "str | None"], AsyncGenerator[Mapping[str, Any]]]
"""The app's turn: a validated request and its conversation -> architecture §4 events (as SSE gets them)."""

VoiceRunner = Callable[[Listening, "str | None"], AsyncGenerator[Mapping[str, Any]]]
"""The app's spoken conversation: an ``audio_start`` and its conversation -> its events."""


@dataclass(slots=True)
class _Request:
    request_id: str
    turn: Turn | Listening


class _Gone(Exception):
    """The client disconnected: the connection's tasks stop."""


def session_of(websocket: WebSocket, header_value: str | None) -> str | None:
    """The conversation: AgentCore's session header, else the query parameter of the same name."""
    return header_value or websocket.query_params.get(SESSION_HEADER) or None


class TurnSocket:
    """One connection: a reader, a sender and the turn runner in one task group."""

    def __init__(
        self,
        websocket: WebSocket,
        run_turn: TurnRunner,
        *,
        session_id: str | None,
        worker_loop: asyncio.AbstractEventLoop | None,
        listen: VoiceRunner | None = None,
    ) -> None:
        self._ws = websocket
        self._run_turn = run_turn
        self._listen = listen
        self._microphone: _Request | None = None  # the open audio_start (queued or running)
        self._session_id = session_id
        self._worker = worker_loop
        self._loop = asyncio.get_running_loop()
        # An event's frames travel as one item: a cancel between them would leave a header without audio.
        self._outbox: asyncio.Queue[WsFrame | tuple[WsFrame, ...]] = asyncio.Queue(OUTBOX_EVENTS)
        self._queued: deque[_Request] = deque()
        self._wake = asyncio.Event()
        self._running: _Request | None = None
        self._worker_task: asyncio.Task[Any] | None = None  # set and cleared on the worker loop
        self._stopping = False  # the client cancelled the running turn
        # One entry per cancel read while a turn runs (the queued turns it dropped): each is answered,
        # in order, once the turn has ended.
        self._waiting_cancels: list[int] = []

    async def serve(self) -> None:
        await self._ws.accept()
        if self._session_id is not None:
            try:
                check_session_id(self._session_id)
            except TurnRefused as refused:
                await self._ws.send_text(event_frames.refusal(None, refused.code, refused.message))
                await self._ws.close(POLICY_VIOLATION)
                return
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._send_loop(), name="ws-sender")
                tasks.create_task(self._turn_loop(), name="ws-turns")
                await self._read_loop()
        except* _Gone:
            logger.info("turn socket closed by the client")

    # ----------------------------------------------------------------------------------- reader

    async def _read_loop(self) -> None:
        while True:
            message = await self._ws.receive()
            if message["type"] == "websocket.disconnect":
                raise _Gone
            payload = message.get("bytes")
            try:
                if payload is not None and control_object(payload) is None:
                    await self._on_audio(payload)
                    continue
                await self._on_message(message.get("text", "") if payload is None else payload)
            except Exception:  # a fault of the app's own: this message is answered, the connection stays
                logger.exception("could not take a WebSocket message")
                failed = "the app failed to read this message"
                await self._outbox.put(event_frames.refusal(None, AppErrorCode.INTERNAL_ERROR, failed))

    async def _on_message(self, payload: bytes | str) -> None:
        try:
            obj = json.loads(decode_text(payload))
        except ProtocolError as exc:
            await self._outbox.put(event_frames.refusal(None, exc.code, exc.message))
            return
        except (ValueError, RecursionError):
            await self._outbox.put(
                event_frames.refusal(None, AppErrorCode.BAD_JSON, "message is not valid JSON")
            )
            return
        if not isinstance(obj, dict):
            await self._outbox.put(
                event_frames.refusal(None, AppErrorCode.BAD_PAYLOAD, "message must be a JSON object")
            )
            return
        kind = obj.get("type", "turn" if "prompt" in obj else None)
        if kind == "cancel":
            await self._cancel()
        elif kind == "turn":
            await self._accept(obj)
        elif kind == "audio_start":
            await self._accept(obj, voice=True)
        elif kind == "audio_stop":
            self._close_microphone()
        else:
            shown = repr(kind[:32]) if isinstance(kind, str) else json_type(kind)
            message = f"unknown message type {shown}; expected turn, cancel, audio_start or audio_stop"
            await self._outbox.put(event_frames.refusal(None, AppErrorCode.UNKNOWN_TYPE, message))

    async def _on_audio(self, pcm: bytes) -> None:
        """A binary frame that is no message: the open microphone's audio."""
        microphone = self._microphone
        if microphone is None or not isinstance(microphone.turn, Listening):
            message = "audio came with no microphone open: send audio_start first"
            await self._outbox.put(event_frames.refusal(None, AppErrorCode.AUDIO_NOT_ANNOUNCED, message))
            return
        inbox = microphone.turn.inbox
        refused = inbox.refusal(pcm)
        if refused is not None:
            code, message = refused
            await self._outbox.put(event_frames.listening_error(microphone.request_id, code, message))
        else:
            inbox.put(pcm)

    def _close_microphone(self) -> None:
        microphone, self._microphone = self._microphone, None
        if microphone is not None and isinstance(microphone.turn, Listening):
            microphone.turn.inbox.close()

    async def _accept(self, obj: dict[str, Any], *, voice: bool = False) -> None:
        raw_id = obj.pop("request_id", None)
        bad_id = not isinstance(raw_id, str) or not 0 < len(raw_id) <= MAX_REQUEST_ID_CHARS
        if raw_id is not None and bad_id:
            message = f"'request_id' must be a string of 1-{MAX_REQUEST_ID_CHARS} characters"
            await self._refuse(None, AppErrorCode.BAD_PAYLOAD, message)
            return
        if raw_id is not None and not utf8_encodable(raw_id):  # echoed in every frame: it must encode
            await self._refuse(
                None, AppErrorCode.BAD_UTF8, "'request_id' has a lone surrogate (\\ud800-\\udfff)"
            )
            return
        request_id = raw_id or uuid.uuid4().hex[:12]
        obj.pop("type", None)
        if voice and (self._microphone is not None or self._listen is None):
            message = "a microphone is already open on this connection: send audio_stop first"
            await self._refuse(request_id, AppErrorCode.MICROPHONE_OPEN, message)
            return
        try:
            turn = parse_audio_start(obj) if voice else parse_turn(obj)
        except TurnRefused as refused:
            await self._refuse(request_id, refused.code, refused.message)
            return
        microphone = self._microphone
        if isinstance(turn, Turn) and microphone is not None and isinstance(microphone.turn, Listening):
            # One conversation: the typed words are the spoken conversation's next user turn (they barge
            # in on its answer), answered in the microphone's request and in its voice.
            microphone.turn.inbox.type(turn.prompt)
            await self._outbox.put(event_frames.turn_end(request_id, "joined"))
            return
        # Waiting behind the running turn; with none running, the first queued one is about to run
        # (turns sent at once are all read before it starts: 7 at once were 4 accepted, not 5).
        waiting = len(self._queued) - (0 if self._running is not None else 1)
        if waiting >= MAX_QUEUED_TURNS:
            message = f"{MAX_QUEUED_TURNS} turns are already waiting on this connection; cancel or wait"
            await self._refuse(request_id, AppErrorCode.TOO_MANY_TURNS, message)
            return
        request = _Request(request_id, turn)
        if voice:
            self._microphone = request
        self._queued.append(request)
        self._wake.set()

    async def _refuse(self, request_id: str | None, code: str, message: str) -> None:
        await self._outbox.put(event_frames.refusal(request_id, code, message))
        await self._outbox.put(event_frames.turn_end(request_id, "refused"))

    async def _cancel(self) -> None:
        """Barge-in: drop the queued turns, stop the running one; answered once it has ended."""
        dropped = list(self._queued)
        self._queued.clear()
        running = self._running is not None
        if self._microphone is not None and self._microphone in (*dropped, self._running):
            self._close_microphone()
        if running:  # stopped first: the answers below may wait on a full outbox (a slow reader)
            self._waiting_cancels.append(len(dropped))
            self._stopping = True
            self._stop_worker()
        for request in dropped:
            await self._outbox.put(event_frames.turn_end(request.request_id, "cancelled"))
        if not running:
            await self._outbox.put(event_frames.cancelled(len(dropped)))

    def _stop_worker(self) -> None:
        """Cancel the running turn's task; one not started yet sees ``_stopping`` when it starts."""
        task, worker = self._worker_task, self._worker or self._loop
        if task is not None:
            with contextlib.suppress(RuntimeError):  # the worker loop is gone: nothing runs there
                worker.call_soon_threadsafe(task.cancel)

    # ----------------------------------------------------------------------------------- turns

    async def _turn_loop(self) -> None:
        while True:
            while not self._queued:
                self._wake.clear()
                await self._wake.wait()
            request = self._queued.popleft()
            self._running, self._stopping = request, False
            try:
                status = await self._run(request)
            finally:
                self._running = None
                if request is self._microphone:  # it ended on its own (a fault): audio now is refused
                    self._close_microphone()
            await self._outbox.put(event_frames.turn_end(request.request_id, status))
            answers, self._waiting_cancels = self._waiting_cancels, []
            for index, dropped in enumerate(answers):  # the first cancel also stopped the running turn
                stopped = 1 if index == 0 and status == "cancelled" else 0
                await self._outbox.put(event_frames.cancelled(stopped + dropped))

    async def _run(self, request: _Request) -> TurnStatus:
        """Run the turn on the worker loop and wait for it; a hang-up here cancels it and waits it out."""
        done: asyncio.Future[TurnStatus] = self._loop.create_future()
        asyncio.run_coroutine_threadsafe(self._produce(request, done), self._worker or self._loop)
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            self._stopping = True
            self._stop_worker()
            await done  # the turn has stopped (and stored what was said): no task outlives the socket
            raise

    async def _produce(self, request: _Request, done: asyncio.Future[TurnStatus]) -> None:
        """On the worker loop: the turn's events, framed and handed to this connection's sender."""
        self._worker_task = asyncio.current_task()
        status: TurnStatus = "completed"
        try:
            if self._stopping:  # cancelled before it started
                status = "cancelled"
                return
            events_of = (
                self._listen(request.turn, self._session_id)
                if isinstance(request.turn, Listening) and self._listen is not None
                else self._run_turn(request.turn, self._session_id)  # type: ignore[arg-type]
            )
            async with aclosing(events_of) as events:
                async for event in events:
                    if event.get("type") == "error":
                        status = "failed"
                    await self._hand_over(tuple(event_frames.turn_frames(event, request.request_id)))
        except asyncio.CancelledError:
            status = "cancelled"
        except Exception:
            logger.exception("a WebSocket turn failed outside the turn")
            status = "failed"
        finally:
            self._worker_task = None
            with contextlib.suppress(RuntimeError):  # the connection's loop is closed: nobody waits
                self._loop.call_soon_threadsafe(_resolve, done, status)

    async def _hand_over(self, frames: tuple[WsFrame, ...]) -> None:
        """From the worker loop into the bounded outbox on this connection's loop (waits while full)."""
        if self._worker is None or self._worker is self._loop:
            await self._outbox.put(frames)
            return
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._outbox.put(frames), self._loop))

    # ----------------------------------------------------------------------------------- sender

    async def _send_loop(self) -> None:
        while True:
            item = await self._outbox.get()
            try:
                for frame in item if isinstance(item, tuple) else (item,):
                    if isinstance(frame, bytes):
                        await self._ws.send_bytes(frame)
                    else:
                        await self._ws.send_text(frame)
            except (WebSocketDisconnect, OSError, RuntimeError) as exc:
                raise _Gone from exc


def _resolve(done: asyncio.Future[TurnStatus], status: TurnStatus) -> None:
    if not done.done():
        done.set_result(status)


def worker_loop_of(app: Any) -> Callable[[], asyncio.AbstractEventLoop]:
    """How to get the loop the SDK runs entrypoint turns on (``BedrockAgentCoreApp``'s worker thread).

    The SDK keeps no public name for it. Without it the app refuses to start rather than run ``/ws``
    turns on another loop than the SSE turns: the conversations' locks belong to one loop.
    """
    ensure = getattr(app, "_ensure_worker_loop", None)
    if not callable(ensure):
        raise RuntimeError(
            "this bedrock-agentcore has no worker loop (BedrockAgentCoreApp._ensure_worker_loop), which "
            "the /ws turns share with the SSE turns; install the version pyproject.toml allows"
        )
    return ensure


def turn_socket_handler(
    app: Any, run_turn: TurnRunner, listen: VoiceRunner | None = None
) -> Callable[[WebSocket, Any], Any]:
    """The ``@app.websocket`` handler: one :class:`TurnSocket` per connection."""
    worker_loop = worker_loop_of(app)  # checked when the app is built, started on the first connection

    async def handle(websocket: WebSocket, context: Any) -> None:
        header = None if context is None else getattr(context, "session_id", None)
        socket = TurnSocket(
            websocket,
            run_turn,
            session_id=session_of(websocket, header),
            worker_loop=worker_loop(),
            listen=listen,
        )
        await socket.serve()

    return handle
