"""The ``chromium`` fixture: Debian's Chromium, or a skip where it is not installed.

Without ``/usr/bin/chromium`` the browser tests skip, unless ``STRANDS_KOKORO_REQUIRE_BROWSER=1`` (set by
``.ci/run``): there a missing browser is a failure, so CI can never pass by skipping them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.browser_harness import CHROMIUM


@pytest.fixture
def chromium() -> Path:
    """The browser binary, or a skip (a failure where CI requires the browser tests to run)."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: apt-get install -y chromium"
        if os.environ.get("STRANDS_KOKORO_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM
