"""Every error code is written once, in its audience's table, and nowhere else a string.

Callers switch on codes, so a code spelled in two places drifts (one file renames it, the other keeps
answering the old word). The tables: the model server's wire codes (:class:`strands_kokoro.protocol.
ErrorCode`), a speech session's (:class:`strands_kokoro.errors.SessionErrorCode`), a turn's
(:class:`strands_kokoro.errors.TurnErrorCode`) and the agent app's
(:class:`agentcore_app.errors.AppErrorCode`, which reuses the wire's members where the fault is the
same) and both local servers' (:class:`kokoro_serving.errors.ServingErrorCode`). Read from the source of
every shipped package, the benchmarks and the examples, as ``grep`` would.

The docs list the same codes: ``docs/error-codes.md`` every code of every table, under its table's name,
and the README's error-code table only codes that exist.
"""

from __future__ import annotations

import re
from enum import StrEnum

import pytest

from agentcore_app.errors import Answer, AppErrorCode, answer_for
from kokoro_serving.errors import ServingErrorCode
from strands_kokoro.errors import CodedError, ListeningErrorCode, SessionErrorCode, TurnErrorCode
from strands_kokoro.protocol import ErrorCode, ProtocolError
from tests.import_graph import REPO_ROOT, python_files

TABLES: dict[type[StrEnum], str] = {
    ErrorCode: "strands_kokoro/protocol/errors.py",
    TurnErrorCode: "strands_kokoro/errors.py",
    SessionErrorCode: "strands_kokoro/errors.py",
    ListeningErrorCode: "strands_kokoro/errors.py",
    AppErrorCode: "agentcore_app/errors.py",
    ServingErrorCode: "kokoro_serving/errors.py",
}
NOT_YET_TABLED: tuple[str, ...] = ()
SOURCES = (
    "strands_kokoro",
    "kokoro_serving",
    "tts_container",
    "agentcore_app",
    "cdk",
    "benchmarks",
    "examples",
)


def _sources() -> dict[str, str]:
    files = python_files(*SOURCES)
    return {str(f.relative_to(REPO_ROOT)): f.read_text(encoding="utf-8") for f in files}


def _literal(code: str) -> re.Pattern[str]:
    """The code as a string literal in Python source (either quote)."""
    return re.compile(rf"""["']{re.escape(code)}["']""")


@pytest.mark.parametrize("table", list(TABLES), ids=lambda t: t.__name__)
def test_each_code_is_a_string_only_in_its_table(table: type[StrEnum]) -> None:
    sources = _sources()
    written: dict[str, list[str]] = {}
    for code in table:
        written[code.value] = [path for path, text in sources.items() if _literal(code.value).search(text)]
    home = {path for path in TABLES.values()}
    elsewhere = {
        code: [p for p in paths if p not in home and p not in NOT_YET_TABLED]
        for code, paths in written.items()
    }
    assert {code: paths for code, paths in elsewhere.items() if paths} == {}


def test_each_code_is_written_as_a_string_in_exactly_one_file() -> None:
    """A code reused by another table (the app's ``bad_json``) is that table's member, so it too is
    written once: in the table that says it first."""
    sources = _sources()
    codes = {code.value for table in TABLES for code in table}
    written = {
        code: sorted(path for path, text in sources.items() if _literal(code).search(text)) for code in codes
    }
    assert {code: paths for code, paths in written.items() if len(paths) != 1} == {}
    assert {path for paths in written.values() for path in paths} <= set(TABLES.values())


def test_a_code_the_app_shares_with_the_wire_is_the_wires_member() -> None:
    shared = {code.value for code in AppErrorCode} & {code.value for code in ErrorCode}
    wire_words = {"bad_json", "bad_utf8", "bad_voice", "unknown_type", "format_unavailable", "internal_error"}
    assert shared == wire_words


def test_a_protocol_error_keeps_its_code_once_as_the_wire_member() -> None:
    refused = ProtocolError(ErrorCode.BAD_SPEED, "'speed' must be a number")
    assert refused.code is ErrorCode.BAD_SPEED and not hasattr(refused, "error_code")


def test_the_answer_to_a_coded_error_keeps_its_code_status_and_retryable() -> None:
    assert answer_for(CodedError(AppErrorCode.PAYLOAD_TOO_LARGE, "too big")) == Answer(
        "payload_too_large", 413, False
    )
    assert answer_for(CodedError("conversation_busy", "busy", retryable=True)).retryable
    assert answer_for(CodedError(AppErrorCode.BAD_JSON, "not JSON")).status == 400


def test_the_answer_to_any_other_exception_is_the_fallback_and_leaks_nothing() -> None:
    answer = answer_for(KeyError("text"), AppErrorCode.AGENT_FAILED)
    assert answer == Answer("agent_failed", 200, False)
    assert answer_for(RuntimeError("boom")).code == "internal_error"


def _documented_codes() -> dict[str, set[str]]:
    """The codes ``docs/error-codes.md`` lists, by the table its section names (``## ...: `Table` ``)."""
    tables: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in (REPO_ROOT / "docs" / "error-codes.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            named = re.search(r"`(\w+)`$", line)
            current = tables.setdefault(named.group(1), set()) if named else None
        elif current is not None and (row := re.match(r"\| `([a-z0-9_]+)` \|", line)):
            current.add(row.group(1))
    return tables


def test_the_reference_lists_every_code_of_every_table_and_no_other() -> None:
    assert _documented_codes() == {table.__name__: {code.value for code in table} for table in TABLES}


def test_the_references_summary_names_every_code_once() -> None:
    """docs/reference.md's table (codes by where they reach a caller) names each code once, none made up."""
    text = (REPO_ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    section = text[text.index("## Error codes") : text.index("\n## ", text.index("## Error codes") + 1)]
    rows = [line.split(" | ")[-1] for line in section.splitlines() if line.startswith("| ") and "`" in line]
    listed = [code for row in rows for code in re.findall(r"`([a-z0-9_]+)`", row)]
    assert sorted(listed) == sorted({code.value for table in TABLES for code in table})
