"""A caller who hangs up is a barge-in: the turn notices at once, not at its next event.

:class:`HangUpWatcher` (ASGI middleware) owns the connection's ``receive`` once the body is read and
fires the request's :class:`HangUp` on ``http.disconnect``; later ``receive`` calls get the same message.
:func:`until_hung_up` wraps the turn's event stream: on a hang-up the wait for the next event is
cancelled and the stream ends normally, so the conversation is stored as for any barge-in. A
:class:`HangUp` is thread-safe: uvicorn's loop and the SDK's worker loop are two loops. Why the SDK alone
is too late: architecture §10.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPE_KEY: Final = "strands_kokoro.hangup"  # where the request's HangUp lives in its ASGI scope


class HangUp:
    """One request's "the caller went away" signal: fired once, from any thread; subscribers are told."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gone = False
        self._subscribers: list[Callable[[], None]] = []

    @property
    def gone(self) -> bool:
        return self._gone

    def fire(self) -> None:
        with self._lock:
            if self._gone:
                return
            self._gone = True
            subscribers, self._subscribers = self._subscribers, []
        for callback in subscribers:
            callback()

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (on the firing thread) when the caller goes; at once if gone already.

        Returns the function that unsubscribes it.
        """
        with self._lock:
            if not self._gone:
                self._subscribers.append(callback)
                return lambda: self._unsubscribe(callback)
        callback()
        return lambda: None

    def _unsubscribe(self, callback: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._subscribers.remove(callback)


def hangup_of(scope: Any) -> HangUp | None:
    """The request's hang-up signal, put in its scope by :class:`HangUpWatcher` (None without one)."""
    found = scope.get(SCOPE_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, HangUp) else None


async def until_hung_up[T](events: AsyncIterable[T], hangup: HangUp | None) -> AsyncIterator[T]:
    """Yield ``events`` until they end or the caller hangs up; then just stop.

    On a hang-up the wait for the next event is cancelled (that cancellation lands inside ``events``,
    which tears the turn down), and this generator returns normally. Only the wait is cancelled, never
    the time between two events, so the cancellation cannot escape into whoever iterates this.
    """
    if hangup is None:
        async for event in events:
            yield event
        return
    loop = asyncio.get_running_loop()
    step: asyncio.Timeout | None = None
    iterator = aiter(events)

    def expire_step() -> None:  # on this loop
        if step is not None and not step.expired():
            step.reschedule(loop.time())

    def on_hangup() -> None:  # on whatever thread fired it
        with contextlib.suppress(RuntimeError):  # this loop is closed: nothing left to stop
            loop.call_soon_threadsafe(expire_step)

    unsubscribe = hangup.subscribe(on_hangup)
    try:
        while not hangup.gone:
            try:
                async with asyncio.timeout(None) as step:
                    event = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if step is not None and step.expired() and hangup.gone:
                    return  # the turn was cancelled because the caller left
                raise
            finally:
                step = None
            yield event
    finally:
        unsubscribe()


class HangUpWatcher:
    """ASGI middleware: give every HTTP request a :class:`HangUp` and fire it on ``http.disconnect``.

    The body is passed through as the app reads it; once it is complete, one watcher task waits for the
    disconnect on the real ``receive`` (the only reader from then on) and the app's later ``receive``
    calls wait on that. A disconnect after the response is complete is no hang-up.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hangup = HangUp()
        scope[SCOPE_KEY] = hangup
        watch = _Watch(receive, send, hangup)
        try:
            await self.app(scope, watch.receive, watch.send)
        finally:
            await watch.stop()


class _Watch:
    """One request's watcher: its ``receive``/``send`` stand in for the server's."""

    def __init__(self, receive: Receive, send: Send, hangup: HangUp) -> None:
        self._receive = receive
        self._send = send
        self._hangup = hangup
        self._body_done = False
        self._responded = False
        self._disconnected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def receive(self) -> Message:
        if not self._body_done:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._gone()
            elif not message.get("more_body", False):
                self._body_done = True
                self._task = asyncio.create_task(self._watch(), name="hangup-watcher")
            return message
        await self._disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self._responded = True
        await self._send(message)

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass  # more body after the end (none in HTTP/1.1): nothing to do with it
        self._gone()

    def _gone(self) -> None:
        if not self._responded:
            self._hangup.fire()
        self._disconnected.set()

    async def stop(self) -> None:
        """The app returned: the watcher has nothing left to watch (awaited, never left running)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
