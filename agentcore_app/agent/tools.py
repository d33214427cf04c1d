"""The app's tools: a small default set for a voice assistant, plus more named in a setting.

The default works offline and touches neither files nor the network: ``calculate``
(:mod:`agentcore_app.agent.arithmetic`); the date and time reach the model as context
(:mod:`agentcore_app.agent.time_context`), not as a tool. ``STRANDS_KOKORO_TOOLS="pkg.mod:attr,..."`` adds
tools, each imported and checked when the app is built, so a typo stops the app with one clear line.
:func:`speech_setting` reads the tool filler's words (``STRANDS_KOKORO_TOOL_FILLER``, ``off``: silent) and
wait (``STRANDS_KOKORO_TOOL_FILLER_AFTER_S``), checked at start too.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any

from agentcore_app.errors import SettingError

TOOLS_ENV = "STRANDS_KOKORO_TOOLS"
FILLER_ENV = "STRANDS_KOKORO_TOOL_FILLER"
FILLER_AFTER_ENV = "STRANDS_KOKORO_TOOL_FILLER_AFTER_S"
MAX_FILLER_CHARS = 80
DEFAULT_TOOLS: tuple[str, ...] = ("agentcore_app.agent.arithmetic:calculate",)


def tool_setting(environ: dict[str, str] | None = None) -> list[str]:
    """The extra entries named in ``STRANDS_KOKORO_TOOLS`` (comma or whitespace separated)."""
    raw = (os.environ if environ is None else environ).get(TOOLS_ENV, "")
    return [entry for entry in raw.replace(",", " ").split() if entry]


def load_tool(entry: str) -> Any:
    """Import ``module:attr`` (``attr`` may be dotted) and check that it is a Strands tool."""
    from strands.types.tools import AgentTool

    module_name, sep, attr = entry.partition(":")
    if not sep or not module_name or not attr:
        raise SettingError(f"{TOOLS_ENV} entry {entry!r}: write it as 'package.module:attribute'")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise SettingError(
            f"{TOOLS_ENV} entry {entry!r}: module {module_name!r} cannot be imported ({type(exc).__name__})"
        ) from None
    for part in attr.split("."):
        if not hasattr(found, part):
            raise SettingError(f"{TOOLS_ENV} entry {entry!r}: {module_name!r} has no attribute {attr!r}")
        found = getattr(found, part)
    if not isinstance(found, AgentTool):
        raise SettingError(
            f"{TOOLS_ENV} entry {entry!r} is a {type(found).__name__}, not a Strands tool "
            "(decorate the function with @strands.tool)"
        )
    return found


def load_tools(extra: Sequence[str] | None = None, *, defaults: Sequence[str] = DEFAULT_TOOLS) -> list[Any]:
    """The default tools plus ``extra`` (default: the setting), each loaded and checked; names unique."""
    entries = [*defaults, *(tool_setting() if extra is None else extra)]
    tools = [load_tool(entry) for entry in entries]
    seen: dict[str, str] = {}
    for entry, tool in zip(entries, tools, strict=True):
        if tool.tool_name in seen:
            raise SettingError(
                f"{TOOLS_ENV} entry {entry!r}: a tool named {tool.tool_name!r} is already loaded "
                f"(from {seen[tool.tool_name]!r})"
            )
        seen[tool.tool_name] = entry
    return tools


def speech_setting(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """``KokoroSpeech`` options from the tool filler settings (only those that are set)."""
    env = os.environ if environ is None else environ
    options: dict[str, Any] = {}
    filler = env.get(FILLER_ENV)
    if filler is not None:
        words = " ".join(filler.split())
        if len(words) > MAX_FILLER_CHARS:
            raise SettingError(f"{FILLER_ENV} is {len(words)} characters; a filler is a few words")
        options["tool_filler"] = None if words.lower() in ("", "off") else words
    after = env.get(FILLER_AFTER_ENV, "").strip()
    if after:
        try:
            seconds = float(after)
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds <= 60:
            raise SettingError(f"{FILLER_AFTER_ENV}={after!r}: give seconds between 0 and 60")
        options["tool_filler_after_s"] = seconds
    return options
