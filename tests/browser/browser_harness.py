"""What the browser tests share: Debian's Chromium under Playwright, and the agent app with the page.

Why Debian's Chromium and not Playwright's own browser: Playwright's browser download cannot work on
these machines (CI installs ``chromium`` with apt). A fresh profile per test keeps runs independent.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from agentcore_app.app import create_app
from agentcore_app.conversation.settings import ConversationSettings
from agentcore_app.local.player import with_page
from agentcore_app.local.stack import serve_asgi
from strands_kokoro.protocol import DEFAULT_VOICE

if TYPE_CHECKING:
    from playwright.async_api import Page
    from strands.models.model import Model


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--autoplay-policy=no-user-gesture-required",
]
ARTIFACTS = Path(__file__).parents[2] / "artifacts" / "browser"


@asynccontextmanager
async def browser_page(
    chromium: Path,
    profile_dir: Path,
    *,
    expected_errors: tuple[str, ...] = (),
    extra_args: tuple[str, ...] = (),
) -> AsyncIterator[Page]:
    """A page in a fresh Chromium profile; any uncaught page error fails the test when the block ends.

    ``expected_errors``: regular expressions of console errors the test provokes on purpose (Chromium
    logs a refused WebSocket handshake as one, and the player then falls back to SSE); each must show up.
    ``extra_args``: more Chromium switches (a fake microphone, say).
    """
    from playwright.async_api import async_playwright

    errors: list[str] = []
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(profile_dir), executable_path=str(chromium), headless=True, args=[*CHROMIUM_ARGS, *extra_args]
        )
        try:
            page = context.pages[0] if context.pages else await context.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            yield page
        finally:
            await context.close()
    for pattern in expected_errors:
        assert any(re.search(pattern, e) for e in errors), f"expected a console error {pattern!r}: {errors}"
    unexpected = [e for e in errors if not any(re.search(p, e) for p in expected_errors)]
    assert not unexpected, f"the page logged errors: {unexpected}"


@asynccontextmanager
async def agent_app_with_page(
    speech_endpoint: str, new_model: Callable[[], Model], *, state_dir: Path | None = None
) -> AsyncIterator[str]:
    """The real agent app (as ``agent-infra serve`` wraps it) on a free port; yields its base URL.

    The page keeps a conversation (it sends a session id), so the app keeps it in ``state_dir``, or in a
    directory of its own that goes with the block: never in the user's cache.
    """
    with tempfile.TemporaryDirectory(prefix="conversations-") as scratch:
        conversations = ConversationSettings(location=state_dir or Path(scratch))
        app = with_page(
            create_app(speech_endpoint=speech_endpoint, model=new_model, conversations=conversations)
        )
        async with serve_asgi(app) as url:
            yield url


async def speak(
    page: Page,
    prompt: str,
    mode: str,
    voice: str = DEFAULT_VOICE,
    *,
    transport: str | None = None,
    audio_format: str | None = None,
) -> None:
    """Ask through the page's own controls, as a user would (``transport``/``audio_format``: the
    page's Transport and Audio choices; None leaves them as they are, "auto" at first)."""
    if transport is not None:
        await page.select_option("#transport", transport)
    if audio_format is not None:
        await page.select_option("#format", audio_format)
    await page.fill("#prompt", prompt)
    await page.check(f"input[name=mode][value={mode}]")
    await page.select_option("#voice", voice)
    await page.click("#send")
