"""``import strands_kokoro`` must work without the extras (strands, torch, onnxruntime, boto3)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# A fresh interpreter where the extras cannot be imported, whatever the venv holds.
BLOCKED_IMPORTS = textwrap.dedent(
    """
    import importlib.abc
    import sys

    BLOCKED = {"strands", "torch", "onnxruntime", "boto3", "botocore", "kokoro_onnx"}

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, Blocker())
    """
)


def run_without_extras(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKED_IMPORTS + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_import_and_chunk_without_extras() -> None:
    result = run_without_extras(
        """
        import json
        import strands_kokoro
        from strands_kokoro import IncrementalSentenceChunker, clean_for_speech, open_session

        chunker = IncrementalSentenceChunker(max_chars=350)
        sentences = chunker.feed("Hello there. How are you")
        session = open_session("ws://127.0.0.1:9")
        loaded = sorted(m for m in ("strands", "torch", "onnxruntime", "boto3") if m in sys.modules)
        print(json.dumps({
            "sentences": sentences, "rest": chunker.flush(), "clean": clean_for_speech("**Hi**"),
            "session": type(session).__name__, "loaded": loaded,
        }))
        """
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out == {
        "sentences": ["Hello there."],
        "rest": ["How are you"],
        "clean": "Hi",
        "session": "WebSocketSession",
        "loaded": [],
    }


def test_kokoro_speech_without_strands_fails_with_a_clear_import_error() -> None:
    result = run_without_extras(
        """
        import strands_kokoro
        try:
            strands_kokoro.KokoroSpeech
        except ImportError as exc:
            print("ImportError", exc)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ImportError") and "strands" in result.stdout


def test_unknown_attribute_is_an_attribute_error() -> None:
    import strands_kokoro

    with pytest.raises(AttributeError):
        _ = strands_kokoro.NoSuchThing  # type: ignore[attr-defined]
    assert "KokoroSpeech" in dir(strands_kokoro)
