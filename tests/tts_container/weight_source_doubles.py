"""A weight source test double shared by the weight-cache tests."""

from __future__ import annotations

from pathlib import Path


class ScriptedSource:
    """Test double: writes ``payload + name`` for each requested file (or raises a scripted error), and
    records what it was asked for."""

    def __init__(self, label: str, error: Exception | None = None, payload: bytes = b"weights:") -> None:
        self.label = label
        self.error = error
        self.payload = payload
        self.calls: list[frozenset[str]] = []

    def fetch(self, names: frozenset[str], staging: Path) -> None:
        self.calls.append(names)
        if self.error is not None:
            raise self.error
        for name in names:
            (staging / name).write_bytes(self.payload + name.encode())
