"""Code speaks in the present tense: short module docstrings, and no references to this project's issues.

A module docstring says what the module does and its contract in a few lines; why, and the figures
behind it, live in docs/ (architecture, benchmarks) and history in git. Read from the source, so nothing
is imported. Scope: the packages whose prose has been brought to this rule; the rest join as they are.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Most lines a module docstring may have, per package. A benchmark's also shows how it is run.
MAX_DOCSTRING_LINES = {
    "tts_container": 10,
    "kokoro_serving": 10,
    "cdk": 10,
    "benchmarks": 12,
    "strands_kokoro": 10,
    "agentcore_app": 10,
}
# Modules another change is rewriting now; each is listed with its length today and leaves this list
# when that change lands.
EXEMPT_LENGTH = {
    "tts_container/engines/onnx_engine.py": 11,
    "tts_container/engines/static_int8.py": 15,
    "tts_container/engines/windows.py": 40,
}
# Test folders of the same packages: no issue references there either.
TEST_DIRS = (
    "tests/tts_container",
    "tests/kokoro_serving",
    "tests/cdk",
    "tests/benchmarks",
    "tests/faults",
    "tests/strands_kokoro",
    "tests/agentcore_app",
)

# "issue 11", "Issues 23", "issue #4", or a bare "#123" (an upstream "owner/repo#123" is a citation and
# stays: nothing but a space or a bracket may come before the "#").
_ISSUE = re.compile(r"\bissues? ?#?\d+|(?:^|[\s(\[])#\d+\b", re.IGNORECASE)


def _files(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


PACKAGE_FILES = _files(*MAX_DOCSTRING_LINES)
PROSE_FILES = [*PACKAGE_FILES, *_files(*TEST_DIRS)]


def docstring_lines(path: Path) -> int:
    docstring = ast.get_docstring(ast.parse(path.read_text()), clean=False)
    return len(docstring.strip().splitlines()) if docstring else 0


def prose(source: str) -> list[tuple[int, str]]:
    """Every comment and docstring of ``source``, with the line it starts on."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    found = [(token.start[0], token.string) for token in tokens if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                found.append((node.body[0].lineno, docstring))
    return found


def issue_references(source: str) -> list[str]:
    """Each reference to an issue in ``source``'s comments and docstrings, with its line."""
    return [
        f"line {line}: {match[0].strip()}" for line, text in prose(source) for match in _ISSUE.finditer(text)
    ]


def limit(name: str) -> int:
    return MAX_DOCSTRING_LINES[name.split("/")[0]]


@pytest.mark.parametrize("path", PACKAGE_FILES, ids=_name)
def test_a_module_docstring_is_a_few_lines(path: Path) -> None:
    name = _name(path)
    lines = docstring_lines(path)
    assert lines <= EXEMPT_LENGTH.get(name, limit(name)), (
        f"{name}: why to docs/architecture.md, figures to benchmarks.md"
    )


@pytest.mark.parametrize("path", PROSE_FILES, ids=_name)
def test_no_comment_or_docstring_cites_an_issue(path: Path) -> None:
    assert issue_references(path.read_text()) == []


@pytest.mark.parametrize("name", EXEMPT_LENGTH)
def test_an_exemption_is_still_needed_and_does_not_grow(name: str) -> None:
    assert limit(name) < docstring_lines(ROOT / name) <= EXEMPT_LENGTH[name]


@pytest.mark.parametrize(
    "text",
    ["# fixed in issue 11", '"""As issue #4 asked."""', "# see #123", '"""Issues 23 item 3: ..."""'],
)
def test_an_issue_reference_is_found(text: str) -> None:
    assert issue_references(text) != []


@pytest.mark.parametrize(
    "text", ["# encode/uvicorn#157 asks for it", 'x = "We are #1"', "# request 1 twice", '"""Issued at 3."""']
)
def test_what_is_not_an_issue_reference_passes(text: str) -> None:
    assert issue_references(text) == []
