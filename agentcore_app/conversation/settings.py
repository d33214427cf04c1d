"""What a conversation is called, where conversations live and how they are bounded: the settings the
app reads once at start (``STRANDS_KOKORO_CONVERSATION*``), apart from the store that uses them
(:mod:`agentcore_app.conversation.store`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentcore_app.errors import AppErrorCode, ConversationSettingError, TurnRefused

CONVERSATIONS_ENV = "STRANDS_KOKORO_CONVERSATIONS"
TURNS_ENV = "STRANDS_KOKORO_CONVERSATION_TURNS"
IDLE_ENV = "STRANDS_KOKORO_CONVERSATION_IDLE_S"
MAX_AGE_ENV = "STRANDS_KOKORO_CONVERSATION_MAX_AGE_S"
CACHE_ENV = "STRANDS_KOKORO_CACHE"
OFF = "off"

DEFAULT_MAX_TURNS = 20
"""Twenty exchanges: far more than a spoken conversation refers back to, small enough to stay cheap."""
DEFAULT_IDLE_EXPIRY_S = 3600.0
"""An hour of silence ends a conversation (AgentCore ends an idle runtime session after 15 minutes; the
history outlives that, so a listener who comes back soon is still remembered)."""
DEFAULT_MAX_AGE_S = 86_400.0
"""A day: the deployed bucket's lifecycle rule deletes objects a day after this, so it never deletes
part of a conversation the app still uses."""

_SCHEME_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")
"""``s3:``, ``file:``, ``https:``...: what starts a URL, not a directory (a lone drive letter ``C:`` is
not one)."""

SESSION_ID_PATTERN = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{32,127}\Z")
"""33-128 letters, digits, ``-`` and ``_``, starting with a letter or digit.

AgentCore requires at least 33 characters (``runtimeSessionId``: min 33, max 256; UUIDs and
``prefix-<uuid>`` ids fit). The id names a directory or an S3 key part, so no separators, dots or
spaces; 128 keeps ``session_<id>`` well inside a file name's 255 bytes.
"""


def check_session_id(session_id: str) -> str:
    """Return ``session_id`` if it matches :data:`SESSION_ID_PATTERN`, else raise ``bad_session_id``."""
    if not SESSION_ID_PATTERN.match(session_id):
        raise TurnRefused(
            AppErrorCode.BAD_SESSION_ID,
            "the runtime session id must be 33-128 letters, digits, '-' or '_', starting with a letter "
            f"or digit (got {len(session_id)} characters)",
        )
    return session_id


def default_state_dir() -> Path:
    """``$STRANDS_KOKORO_CACHE/conversations``, else ``~/.cache/strands-kokoro/conversations``.

    The same cache root as the Kokoro weights, so one setting moves everything this project keeps.
    """
    configured = os.environ.get(CACHE_ENV)
    root = Path(configured).expanduser() if configured else Path.home() / ".cache" / "strands-kokoro"
    return root / "conversations"


@dataclass(frozen=True, slots=True)
class S3Location:
    """Where the deployed app keeps conversations: ``s3://<bucket>/<prefix>``."""

    bucket: str
    prefix: str


@dataclass(frozen=True, slots=True)
class ConversationSettings:
    """Where conversations live and how they are bounded. ``location`` None: conversations are off."""

    location: Path | S3Location | None
    max_turns: int = DEFAULT_MAX_TURNS
    idle_expiry_s: float = DEFAULT_IDLE_EXPIRY_S
    max_age_s: float = DEFAULT_MAX_AGE_S

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ConversationSettingError(f"{TURNS_ENV} must be at least 1, got {self.max_turns}")
        for name, value in ((IDLE_ENV, self.idle_expiry_s), (MAX_AGE_ENV, self.max_age_s)):
            if not value > 0:
                raise ConversationSettingError(f"{name} must be a positive number of seconds, got {value}")

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ConversationSettings:
        """Read the ``STRANDS_KOKORO_CONVERSATION*`` settings (docs/agent-app.md has the table)."""
        env = dict(os.environ if environ is None else environ)
        return cls(
            location=parse_location(env.get(CONVERSATIONS_ENV, "")),
            max_turns=int(_number(env, TURNS_ENV, DEFAULT_MAX_TURNS, int)),
            idle_expiry_s=float(_number(env, IDLE_ENV, DEFAULT_IDLE_EXPIRY_S, float)),
            max_age_s=float(_number(env, MAX_AGE_ENV, DEFAULT_MAX_AGE_S, float)),
        )


def parse_location(raw: str, *, setting: str = CONVERSATIONS_ENV) -> Path | S3Location | None:
    """``""`` -> the default state dir; ``off`` -> None; ``s3://bucket/prefix``; else a directory.

    Anything that starts like a URL but is not ``s3://`` (``s3:/bucket``, ``file:///x``, ``http://...``)
    is refused rather than taken for a directory named ``s3:``: the app would otherwise start, and
    write conversations under ``./s3:/bucket`` at the first turn. ``setting`` names where the value
    came from in the message (the environment variable, or a command-line option).
    """
    raw = raw.strip()
    if not raw:
        return default_state_dir()
    if raw.lower() == OFF:
        return None
    if raw.startswith("s3://"):
        bucket, _, prefix = raw.removeprefix("s3://").partition("/")
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket):
            raise ConversationSettingError(
                f"{setting}={raw!r}: {bucket!r} is not an S3 bucket name",
                AppErrorCode.BAD_CONVERSATIONS_LOCATION,
            )
        return S3Location(bucket, prefix.strip("/"))
    if _SCHEME_LIKE.match(raw) or "://" in raw:
        if raw[:5].lower() == "s3://":
            hint = " (s3:// is written in lower case)"
        elif raw.lower().startswith("s3:"):
            hint = " (s3: takes two slashes)"
        elif "://" not in raw:
            hint = f" (a directory whose name has a colon is written ./{raw})"
        else:
            hint = ""
        raise ConversationSettingError(
            f"{setting}={raw!r}: use a directory, s3://<bucket>/<prefix> or '{OFF}'{hint}",
            AppErrorCode.BAD_CONVERSATIONS_LOCATION,
        )
    return Path(raw).expanduser()


def _number(env: dict[str, str], name: str, default: float, kind: Callable[[str], float]) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ConversationSettingError(f"{name}={raw!r} is not a {kind.__name__}") from None
