"""``tts_container`` reaches ``strands_kokoro`` only through the modules both ends share (architecture §2).

``strands_kokoro.protocol`` (the wire's frames), ``strands_kokoro.audio_encoding`` (the codecs of the
wire's audio: a request's ``format`` must mean the same bytes whoever encodes them),
``strands_kokoro.errors`` (the coded-error base the wire's errors extend), and the two text rules both
ends apply, ``strands_kokoro.text.emoji_chars`` and ``strands_kokoro.text.blank_lines`` (which
characters are emoji, what a blank line is). Nothing else of the library, nor the agent app or the
launchers; what it shares with the agent app is ``kokoro_serving``. And the wire modules pull nothing
else of the library in with them.
"""

from __future__ import annotations

from tests.import_graph import imports_of, python_files

WIRE = ("strands_kokoro.protocol", "strands_kokoro.audio_encoding", "strands_kokoro.errors")
SHARED = (*WIRE, "strands_kokoro.text.blank_lines", "strands_kokoro.text.emoji_chars")


def _outside(module: str, allowed: tuple[str, ...]) -> bool:
    return module not in ("strands_kokoro", "strands_kokoro.text") and not any(
        module == a or module.startswith(a + ".") for a in allowed
    )


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
        if i.is_of(("agentcore_app", "cdk", "benchmarks"))
    ]


def test_the_wire_modules_import_nothing_else_of_the_library() -> None:
    files = python_files(
        "strands_kokoro/protocol", "strands_kokoro/audio_encoding", "strands_kokoro/errors.py"
    )
    found = [
        str(imp)
        for path in files
        for imp in imports_of(path)
        if imp.is_of(("strands_kokoro",)) and _outside(imp.module, WIRE)
    ]
    assert found == []
