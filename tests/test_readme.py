"""README.md is the product page: short, its two set-up commands first, every command in it real, every
relative link (and its #anchor) resolving, in README and in the guides under docs/.

The commands are run with ``--help`` from this environment's own scripts, with the ``uv run`` options
checked against pyproject.toml: running ``uv run`` here would sync the test environment under the tests.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUN_COMMAND = "uv run --extra demo agent-infra demo --local"
TEST_COMMAND = "uv run --all-extras pytest"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"```(?:bash|sh)\n(.*?)```", re.S)


def readme_commands() -> list[str]:
    """Every ``uv run`` command of README: the lines of its shell blocks (without a trailing comment) and
    the inline ones."""
    text = README.read_text()
    lines = [line for block in _FENCE.findall(text) for line in block.splitlines()]
    blocks = [line.split("  #")[0].strip() for line in lines if line.startswith("uv run ")]
    inline = re.findall(r"`(uv run [^`]+)`", _FENCE.sub("", text))
    return list(dict.fromkeys([*blocks, *inline]))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())  # backticks, emphasis, punctuation
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    return {slug(match) for match in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_the_readme_is_a_page_not_a_notebook() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, len(lines)
    first = lines[:60]
    assert RUN_COMMAND in first and TEST_COMMAND in first  # each a line of its own, in a shell block


def test_ci_runs_the_readmes_test_command_exactly() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert TEST_COMMAND in [line.strip() for line in ci]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    prose = re.sub(
        r"`[^`\n]*`", "", re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    )  # code is not a link
    for target in _LINK.findall(prose):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not ours to check
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor}")
    assert not broken, f"{page.name}: {broken}"


def test_the_slug_is_githubs() -> None:
    assert slug("## 3. Wire protocol (model server ⇄ client): `strands_kokoro/protocol.py`".lstrip("# ")) == (
        "3-wire-protocol-model-server--client-strands_kokoroprotocolpy"
    )
    assert slug("Text the server will not say") == "text-the-server-will-not-say"


@pytest.mark.slow
@pytest.mark.parametrize("command", readme_commands())
def test_every_readme_command_runs(command: str) -> None:
    """The ``uv run`` options name extras that exist; the command itself answers ``--help``."""
    argv = shlex.split(command)[2:]
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    while argv and argv[0].startswith("--"):
        option = argv.pop(0)
        if option == "--extra":
            assert argv.pop(0) in extras, command
        else:
            assert option == "--all-extras", command
    if argv[0] == "python":
        argv = [sys.executable, *argv[1:]]
    else:
        argv = [str(Path(sys.executable).parent / argv[0]), *argv[1:]]
    if "pytest" in argv[0]:
        argv = [sys.executable, "-m", "pytest"]
    kept: list[str] = []
    for arg in argv:  # a placeholder such as <model-id> is the reader's to fill, with its option
        if "<" in arg:
            if kept and kept[-1].startswith("--"):
                kept.pop()
        else:
            kept.append(arg)
    argv = kept
    result = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
    assert "usage" in (result.stdout + result.stderr).lower(), command
