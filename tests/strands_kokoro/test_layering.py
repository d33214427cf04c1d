"""The client library is the client alone: ``strands_kokoro`` imports no server, launcher or server plumbing.

``pip install strands-kokoro`` installs it on websockets and httpx (architecture §2), so no module of it
may import, even lazily, the servers (``tts_container``, ``agentcore_app``), what they share
(``kokoro_serving``), the CDK app, the benchmarks, or what only the servers' extras install. The one
exception is :mod:`strands_kokoro.listening` (the ``listen`` extra): its voice activity and speech-to-text
run numpy and onnxruntime in the client's process; it still imports no server.
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


LISTENING = "strands_kokoro/listening/"
LISTENING_MAY_IMPORT = ("numpy", "onnxruntime")


def test_the_client_imports_nothing_of_the_servers() -> None:
    files = python_files("strands_kokoro")
    assert violations([f for f in files if LISTENING not in f.as_posix()], SERVER_SIDE) == []
    servers = tuple(m for m in SERVER_SIDE if m not in LISTENING_MAY_IMPORT)
    assert violations([f for f in files if LISTENING in f.as_posix()], servers) == []
