"""The client library is the client alone: ``strands_kokoro`` imports no server, launcher or server plumbing.

``pip install strands-kokoro`` installs it on websockets and httpx (architecture §2), so no module of it
may import, even lazily, the servers (``tts_container``, ``agentcore_app``), what they share
(``kokoro_serving``), the CDK app, the benchmarks, or what only the servers' extras install.
"""

from __future__ import annotations

from tests.import_graph import python_files, violations

SERVER_SIDE = (
    "kokoro_serving",
    "tts_container",
    "agentcore_app",
    "cdk",
    "benchmarks",
    "starlette",
    "uvicorn",
    "numpy",
    "onnxruntime",
    "torch",
)


def test_the_client_imports_nothing_of_the_servers() -> None:
    assert violations(python_files("strands_kokoro"), SERVER_SIDE) == []
