"""Shared fixtures: the REAL Kokoro model server, started once per test session over a real socket."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.model_server_process import RunningServer, start_model_server, stop_model_server


@pytest.fixture(scope="session")
def model_server() -> Iterator[RunningServer]:
    """One real model server (onnx engine, real Kokoro weights) shared by the whole test session (one per
    pytest-xdist worker)."""
    server = start_model_server()
    try:
        yield server
    finally:
        stop_model_server(server)
