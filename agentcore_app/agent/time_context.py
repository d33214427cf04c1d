"""The date and time, given to the model with each question instead of a ``current_time`` tool.

"What time is it?" is what a listener asks a voice assistant most, and a tool round trip for it costs a
second model call before the first word is spoken. Strands' ``ContextInjector`` folds a line into the
latest user message for that one model call (never into the stored conversation), so the model answers
at once. This is the migration path strands-agents-tools 0.8.10 gives for its deprecated
``current_time`` tool.

The time is the serving machine's clock in its own zone (UTC on AgentCore and in containers); a
deployment in another zone sets ``TZ``.
"""

from __future__ import annotations

from datetime import datetime

from strands.vended_plugins.context_injector import ContextInjector, InjectionContext

PLUGIN_NAME = "strands-kokoro:time"


def now_line(now: datetime | None = None) -> str:
    """The injected text, e.g. ``<now>Tuesday 1 December 2026, 14:05 UTC</now>``; a zone other than UTC
    carries its offset, ``<now>Tuesday 1 December 2026, 14:05 EST (UTC-05:00)</now>``.

    To the minute: turns asked within the same minute see the same line, so a model that samples with a
    fixed seed answers them alike (the demo's two modes compare the same answer). Short: the model reads
    it fresh with every question, before its first word.
    """
    moment = datetime.now().astimezone() if now is None else now if now.tzinfo else now.astimezone()
    offset = moment.utcoffset()
    zone = moment.tzname() or ""
    spoken = f"{moment:%A} {moment.day} {moment:%B %Y, %H:%M}"
    if offset is not None and not offset and zone in ("UTC", "GMT", ""):
        return f"<now>{spoken} UTC</now>"
    utc = f"UTC{moment:%z}"
    utc = f"{utc[:-2]}:{utc[-2:]}"
    return (
        f"<now>{spoken} {utc}</now>"
        if not zone or zone.startswith("UTC")
        else f"<now>{spoken} {zone} ({utc})</now>"
    )


def render_now(context: InjectionContext) -> str:
    """``ContextInjector``'s callback: the line for this model call (the messages are not needed)."""
    del context
    return now_line()


def time_context() -> ContextInjector:
    """A fresh plugin for one agent (plugins bind to the agent they are given to)."""
    return ContextInjector(render_now, name=PLUGIN_NAME)
