"""Tools for the tests (test doubles): a tool that waits until the test lets it answer.

Loaded by the app through its real setting (``STRANDS_KOKORO_TOOLS=tests.agentcore_app.probe_tools:...``),
so the tests also cover how extra tools are named and loaded. The events are module-level because the
app runs the tool in a worker thread of the same process as the test; call :func:`reset` first.
"""

from __future__ import annotations

import threading

from strands import tool

STARTED = threading.Event()
RELEASE = threading.Event()
WAIT_S = 60.0


def reset() -> None:
    STARTED.clear()
    RELEASE.clear()


@tool
def wait_for_listener() -> str:
    """Wait until the test says the listener heard what was said before this tool, then answer.

    Returns "released" when the test let it go, "timed out" when nobody did within a minute.
    """
    STARTED.set()
    return "released" if RELEASE.wait(WAIT_S) else "timed out"


not_a_tool = "a plain string"
