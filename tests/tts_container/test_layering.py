"""``tts_container`` reaches ``strands_kokoro`` only through the modules both ends share (architecture §2).

``strands_kokoro.protocol`` (the wire's frames), ``strands_kokoro.audio_encoding`` (the codecs of the
wire's audio: a request's ``format`` must mean the same bytes whoever encodes them), ``strands_kokoro.
serving`` (what both servers do about silent and cross-site callers), ``strands_kokoro.emoji_chars``
and ``strands_kokoro.blank_lines`` (which characters are emoji, what a blank line is: the one rule each,
both ends' text handling uses), ``strands_kokoro.errors`` and
``strands_kokoro.uninterruptible`` (awaiting a thread's call through cancellations).
Nothing else of the library, nor the app or the launchers. And the two wire modules pull nothing else
of the library in with them.
"""

from __future__ import annotations

from tests.import_graph import imports_of, python_files

WIRE = ("strands_kokoro.protocol", "strands_kokoro.audio_encoding", "strands_kokoro.errors")
SHARED = (
    *WIRE,
    "strands_kokoro.blank_lines",
    "strands_kokoro.emoji_chars",
    "strands_kokoro.serving",
    "strands_kokoro.uninterruptible",
)


def _outside(module: str, allowed: tuple[str, ...]) -> bool:
    return module != "strands_kokoro" and not any(module == a or module.startswith(a + ".") for a in allowed)


def test_the_model_server_imports_only_the_shared_modules_of_strands_kokoro() -> None:
    found = [
        str(imp)
        for path in python_files("tts_container")
        for imp in imports_of(path)
        if imp.is_of(("strands_kokoro",)) and _outside(imp.module, SHARED)
    ]
    assert found == []
    assert not [
        str(i)
        for p in python_files("tts_container")
        for i in imports_of(p)
        if i.is_of(("agentcore_app", "cdk"))
    ]


def test_the_wire_modules_import_nothing_else_of_the_library() -> None:
    files = python_files("strands_kokoro/protocol", "strands_kokoro/audio_encoding")
    found = [
        str(imp)
        for path in files
        for imp in imports_of(path)
        if imp.is_of(("strands_kokoro",)) and _outside(imp.module, WIRE)
    ]
    assert found == []
