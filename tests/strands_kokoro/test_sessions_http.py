"""The POST /invocations session: the shared contract against the REAL model server."""

from __future__ import annotations

import pytest

from strands_kokoro.protocol import parse_error_body
from strands_kokoro.sessions import open_session
from tests.model_server_process import RunningServer, free_port
from tests.strands_kokoro.session_contract import SessionContract, SessionFactory


class TestHttpSessionContract(SessionContract):
    @pytest.fixture
    def session_factory(self, model_server: RunningServer) -> SessionFactory:
        return lambda: open_session(model_server.http_url)

    @pytest.fixture
    def dead_session_factory(self) -> SessionFactory:
        return lambda: open_session(f"http://127.0.0.1:{free_port()}", timeout=5.0)


def test_error_bodies_map_to_coded_errors() -> None:
    flat = parse_error_body(
        b'{"type": "error", "code": "bad_speed", "message": "too fast"}', request_id="r", status=400
    )
    assert (flat.code, flat.message) == ("bad_speed", "too fast")
    nested = parse_error_body(
        b'{"error": {"code": "unknown_voice", "message": "no"}}', request_id="r", status=400
    )
    assert nested.code == "unknown_voice"
    opaque = parse_error_body(b"<html>bad gateway</html>", request_id="r", status=502)
    assert opaque.code == "http_502" and "502" in opaque.message
