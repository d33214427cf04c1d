"""Conversations that remember, keyed by AgentCore's runtime session id, kept by Strands' session managers.

Each turn builds a fresh ``Agent`` whose session manager restores the history: a ``FileSessionManager``
under a state directory locally, an ``S3SessionManager`` deployed. :class:`TurnBuffer` holds a turn's
messages and writes them when it ends, whole or collapsed (:mod:`agentcore_app.conversation.history`),
so a barge-in never stores half a turn. At most ``max_turns`` turns are kept; a conversation idle for
``idle_expiry_s`` or older than ``max_age_s`` starts afresh (and is swept); session ids must match
``SESSION_ID_PATTERN`` (:mod:`agentcore_app.conversation.settings`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import threading
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from strands.session.file_session_manager import FileSessionManager
from strands.session.repository_session_manager import RepositorySessionManager
from strands.session.s3_session_manager import S3SessionManager
from strands.types.exceptions import SessionException
from strands.types.session import Session

from agentcore_app.conversation.history import TurnWindowConversationManager, collapse_turn, is_turn_start
from agentcore_app.conversation.settings import (
    ConversationSettings,
    S3Location,
    check_session_id,
)
from agentcore_app.errors import AppErrorCode, ConversationSettingError, TurnRefused
from kokoro_serving.uninterruptible import run_to_end

if TYPE_CHECKING:
    from strands import Agent
    from strands.types.content import Message

logger = logging.getLogger(__name__)

AGENT_ID = "voice"
"""One agent per conversation; the id names its folder inside the session."""
LAST_TURN_KEY = "strands_kokoro_last_turn_at"
"""Agent state key: when the last turn ended (epoch seconds). Strands rewrites its agent record only when
something in it changes, so its own ``updated_at`` cannot tell when the conversation was last used."""
BUSY_WAIT_S = 10.0
"""How long a turn waits for the previous turn of its conversation to end. A barge-in cancels the old turn
within a second; a second client talking over a running turn is refused after this."""
SWEEP_INTERVAL_S = 60.0


# ------------------------------------------------------------------------------ the session managers


class TurnBuffer(RepositorySessionManager):
    """A Strands repository session manager whose turns are written when they end.

    Between :meth:`open_turn` and :meth:`close_turn`, ``append_message`` and ``sync_agent`` (which Strands
    calls on every message) only remember; :meth:`close_turn` writes the whole turn, or its collapsed form
    (:func:`agentcore_app.conversation.history.collapse_turn`), and then the agent record (its conversation
    manager state says how many old messages were trimmed, which the next restore skips). Combined with a
    storage class below (file or S3) by multiple inheritance, as Strands' own managers are built.
    """

    _turn: list[Message] | None = None

    def open_turn(self) -> None:
        self._turn = []

    def append_message(self, message: Message, agent: Any, **kwargs: Any) -> None:
        if self._turn is None:
            super().append_message(message, agent, **kwargs)
        else:
            self._turn.append(message)

    def sync_agent(self, agent: Any, **kwargs: Any) -> None:
        if self._turn is None:
            super().sync_agent(agent, **kwargs)

    def redact_latest_message(self, redact_message: Message, agent: Any, **kwargs: Any) -> None:
        if self._turn:
            self._turn[-1] = redact_message
        else:
            super().redact_latest_message(redact_message, agent, **kwargs)

    def close_turn(self, agent: Agent, *, finished: bool, written: str, now: float) -> None:
        """Write the turn: as Strands recorded it when ``finished``, else collapsed to what was written."""
        turn, self._turn = self._turn or [], None
        if not turn:
            return  # the turn ended before its prompt was added (refused, or cancelled while loading)
        if not finished:
            start = next((i for i, m in enumerate(agent.messages) if m is turn[0] and is_turn_start(m)), None)
            if start is None:  # never expected: Strands adds the prompt first; store nothing half-done
                logger.warning("unfinished turn without its prompt in the history; not stored")
                return
            collapse_turn(agent.messages, start, written)
            turn = agent.messages[start:]
        agent.conversation_manager.apply_management(agent)  # idempotent; Strands ran it already
        for message in turn:
            super().append_message(message, agent)
        agent.state.set(LAST_TURN_KEY, now)
        super().sync_agent(agent)


class FileConversation(TurnBuffer, FileSessionManager):
    """A conversation in the local state directory."""


def _denied(exc: BaseException) -> bool:
    cause = exc.__cause__
    return isinstance(cause, ClientError) and cause.response.get("Error", {}).get("Code") in (
        "403",
        "AccessDenied",
    )


class S3Conversation(TurnBuffer, S3SessionManager):
    """A conversation under the deployed bucket's prefix.

    Why a 403 means "missing" here: the role may list the bucket only under its own prefix (an
    ``s3:prefix`` condition). S3 answers a missing key with 404 only to callers it lets list the bucket,
    and a HEAD or GET carries no prefix for that condition to match, so a missing key can come back as
    403. The role may read every key under the prefix, so a 403 there means "not there".
    """

    def _read_s3_object(self, key: str) -> dict[str, Any] | None:
        try:
            return super()._read_s3_object(key)
        except SessionException as exc:
            if _denied(exc):
                return None
            raise

    def create_session(self, session: Session, **kwargs: Any) -> Session:
        try:
            return super().create_session(session, **kwargs)
        except SessionException as exc:
            if not _denied(exc):
                raise
        self._write_s3_object(f"{self._get_session_path(session.session_id)}session.json", session.to_dict())
        return session


# ------------------------------------------------------------------------------------------ the store


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


class ConversationStore:
    """Opens conversations by session id, one turn at a time per conversation, within the bounds.

    Created once per app; everything async happens on the caller's loop (the AgentCore SDK's worker
    loop), and the blocking storage calls (file or S3) run in worker threads.
    """

    def __init__(self, settings: ConversationSettings, *, clock: Callable[[], float] = time.time) -> None:
        if settings.location is None:
            raise ConversationSettingError("conversations are off: there is no store to open")
        self.settings = settings
        self.location = settings.location
        self.clock = clock
        self._guard = threading.Lock()
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}
        self._last_sweep = float("-inf")

    def conversation_manager(self) -> TurnWindowConversationManager:
        """What every conversation's agent trims its history with."""
        return TurnWindowConversationManager(self.settings.max_turns)

    @contextlib.asynccontextmanager
    async def turn(self, session_id: str, *, wait_s: float = BUSY_WAIT_S) -> AsyncIterator[TurnBuffer]:
        """The conversation's session manager, held for one turn (one turn per conversation at a time).

        Raises :class:`TurnRefused` ``conversation_busy`` when the previous turn does not end within
        ``wait_s``, and ``conversation_unavailable`` when the storage cannot be reached.
        """
        check_session_id(session_id)
        lock = self._lock_for(session_id)
        try:
            try:
                await asyncio.wait_for(lock.acquire(), wait_s)
            except TimeoutError:
                raise TurnRefused(
                    AppErrorCode.CONVERSATION_BUSY, "another turn of this conversation is still running"
                ) from None
            try:
                try:
                    manager = await asyncio.to_thread(self.open, session_id)
                except Exception:
                    logger.exception("conversation %s could not be opened", session_id)
                    raise TurnRefused(
                        AppErrorCode.CONVERSATION_UNAVAILABLE, "the conversation store cannot be reached"
                    ) from None
                yield manager
            finally:
                lock.release()
        finally:
            self._release_lock(session_id)

    async def write_through(self, write: Callable[[], object]) -> None:
        """Run the blocking ``write`` of a turn in a worker thread to its end, also when the caller is
        cancelled meanwhile (the cancel is re-raised after it); a failure is logged, not raised.

        Why: a turn is stored while the SDK tears the request down after a disconnect. If a cancellation
        (the first, or any later one) cut the wait short, the lock would be released before the turn is
        written and the next turn could restore a history without it.
        """
        try:
            await run_to_end(asyncio.to_thread(write))
        except Exception:
            logger.exception("a conversation turn could not be stored")

    def open(self, session_id: str) -> TurnBuffer:
        """The session manager for ``session_id``; an expired conversation is deleted and starts afresh."""
        self._maybe_sweep()
        manager = self._manager(session_id)
        record = manager.read_agent(session_id, AGENT_ID)
        if record is not None and self._expired(manager.session.created_at, record.state, record.updated_at):
            logger.info("conversation %s expired; starting afresh", session_id)
            manager.delete_session(session_id)
            manager = self._manager(session_id)
        return manager

    def _manager(self, session_id: str) -> FileConversation | S3Conversation:
        if isinstance(self.location, S3Location):
            return S3Conversation(
                session_id=session_id, bucket=self.location.bucket, prefix=self.location.prefix
            )
        return FileConversation(session_id=session_id, storage_dir=str(self.location))

    def _expired(self, created_at: str, state: dict[str, Any], updated_at: str) -> bool:
        now = self.clock()
        last = state.get(LAST_TURN_KEY)
        last_turn = float(last) if isinstance(last, int | float) else _epoch(updated_at)
        return (
            now - last_turn > self.settings.idle_expiry_s
            or now - _epoch(created_at) > self.settings.max_age_s
        )

    # ------------------------------------------------------------------------------------ locks

    def _lock_for(self, session_id: str) -> asyncio.Lock:
        with self._guard:
            self._users[session_id] = self._users.get(session_id, 0) + 1
            return self._locks.setdefault(session_id, asyncio.Lock())

    def _release_lock(self, session_id: str) -> None:
        with self._guard:
            self._users[session_id] -= 1
            if not self._users[session_id]:
                del self._users[session_id], self._locks[session_id]

    def _in_use(self) -> set[str]:
        with self._guard:
            return set(self._users)

    # ------------------------------------------------------------------------------------ sweep

    def _maybe_sweep(self) -> None:
        """Delete expired conversations from the local state directory (at most once a minute).

        Why: most conversations are never addressed again, so expiry on the next turn alone would let
        the directory grow forever. The deployed bucket needs no sweep: its lifecycle rule does this.
        """
        if isinstance(self.location, S3Location):
            return
        now = self.clock()
        with self._guard:
            if now - self._last_sweep < SWEEP_INTERVAL_S:
                return
            self._last_sweep = now
        sweep_state_dir(self.location, self.settings, now=now, keep=self._in_use())


def sweep_state_dir(state_dir: Path, settings: ConversationSettings, *, now: float, keep: set[str]) -> int:
    """Remove the conversations in ``state_dir`` that are idle or too old; returns how many went.

    File times stand in for the stored timestamps (cheap: no JSON is read): ``agent.json`` is rewritten
    at the end of every turn, ``session.json`` is written once when the conversation starts.
    """
    removed = 0
    if not state_dir.is_dir():
        return removed
    for folder in state_dir.glob("session_*"):
        session_id = folder.name.removeprefix("session_")
        if session_id in keep or not folder.is_dir():
            continue
        try:
            created = (folder / "session.json").stat().st_mtime
            agent_file = folder / "agents" / f"agent_{AGENT_ID}" / "agent.json"
            last = agent_file.stat().st_mtime if agent_file.exists() else created
        except OSError:
            continue
        if now - last > settings.idle_expiry_s or now - created > settings.max_age_s:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed
