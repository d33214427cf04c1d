"""``kokoro_serving`` is the servers' shared plumbing: below both servers, beside the client library.

It reaches the library only through the wire (``strands_kokoro.protocol``: the codes its refusals carry),
and imports neither server, the launchers nor the CDK app, so each server's image carries it whole.
"""

from __future__ import annotations

from tests.import_graph import imports_of, python_files, violations


def test_it_imports_only_the_wire_of_the_library() -> None:
    found = [
        str(imp)
        for path in python_files("kokoro_serving")
        for imp in imports_of(path)
        if imp.is_of(("strands_kokoro",))
        and imp.module != "strands_kokoro"
        and not imp.is_of(("strands_kokoro.protocol",))
    ]
    assert found == []


def test_it_imports_no_server_launcher_or_cdk() -> None:
    forbidden = ("tts_container", "agentcore_app", "cdk", "benchmarks")
    assert violations(python_files("kokoro_serving"), forbidden) == []
