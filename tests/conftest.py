"""Shared fixtures: the REAL Kokoro model server, started once per test session over a real socket."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.model_server_process import RunningServer, start_model_server, stop_model_server

# Property tests explore new examples on every local run; CI (``.ci/run`` sets HYPOTHESIS_PROFILE=ci)
# replays the same ones, so a red CI is a change's doing, not a draw's. What a local run finds becomes a
# named regression case (test_text_normalization: test_inputs_the_property_test_found_are_read).
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# What makes a test slow, written once: it needs the real model server, a CDK synth or Chromium. Such tests
# are marked ``slow`` here (besides the modules that mark themselves), so the inner loop
# ``pytest -m "not slow"`` leaves them out and CI, which selects no marker, still runs them
# (docs/contributing.md).
SLOW_FIXTURES = frozenset({"model_server", "synthesized", "chromium"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


# Audio compared in tests runs to hundreds of kB: pytest's own explanation of two unequal byte strings
# (a difflib diff of their reprs) takes longer than the test's timeout, and the failure is lost to it.
LONG_BYTES = 4096


def pytest_assertrepr_compare(op: str, left: object, right: object) -> list[str] | None:
    """Where two long byte strings part, in one line, instead of pytest's diff."""
    if op != "==" or not isinstance(left, bytes | bytearray) or not isinstance(right, bytes | bytearray):
        return None
    if max(len(left), len(right)) < LONG_BYTES:
        return None
    parted = next(
        (i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b), min(len(left), len(right))
    )
    return [f"{len(left)} bytes == {len(right)} bytes: they part at byte {parted}"]


@pytest.fixture(scope="session")
def model_server() -> Iterator[RunningServer]:
    """One real model server (onnx engine, real Kokoro weights) shared by the whole test session (one per
    pytest-xdist worker)."""
    # No idle calibration: tests here count engine calls per request and compare audio across runs, so
    # no voice may start streaming mid-session (tests/tts_container/test_voice_calibration.py tests it).
    # Many modules share this server at once (two workers): a fixed ceiling keeps its admission out of
    # their way on a loaded machine; admission itself is tested on servers of its own.
    server = start_model_server("--no-idle-calibration", "--max-listeners", "64")
    try:
        yield server
    finally:
        stop_model_server(server)
