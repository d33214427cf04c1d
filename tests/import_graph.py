"""Read a package's imports from its source (ast), so layering rules are checked without importing anything.

Every ``import`` / ``from ... import`` counts, wherever it is written: at the top, inside a function (the
lazy imports launchers use), under ``if TYPE_CHECKING:``; ``at_import`` tells the first kind (runs when
the module is imported) from the others (runs later, or never). Relative imports are resolved against the
file's package. A rule is then a plain assertion over :func:`imports_of` in a test.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class Import:
    """One imported module name, where it is written, and whether it runs when the file is imported."""

    module: str
    path: Path
    line: int
    at_import: bool

    def __str__(self) -> str:
        where = "at import" if self.at_import else "inside a function or TYPE_CHECKING"
        shown = self.path.relative_to(REPO_ROOT) if self.path.is_relative_to(REPO_ROOT) else self.path
        return f"{shown}:{self.line} imports {self.module} ({where})"

    def is_of(self, packages: Iterable[str]) -> bool:
        return any(self.module == p or self.module.startswith(p + ".") for p in packages)


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    module = _module_of(path)
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _deferred(node: ast.AST) -> bool:
    """A function body runs later; an ``if TYPE_CHECKING:`` body never runs."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return True
    if isinstance(node, ast.If):
        test = node.test
        name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
        return name == "TYPE_CHECKING"
    return False


def _walk(node: ast.AST, deferred: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        yield child, deferred
        yield from _walk(child, deferred or _deferred(child))


def imports_of(path: Path) -> list[Import]:
    """Every module ``path`` imports (``from a import b`` counts as ``a`` and as ``a.b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []
    for node, deferred in _walk(tree, False):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = _package_of(path).split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        line = getattr(node, "lineno", 0)
        found += [Import(name, path, line, not deferred) for name in names]
    return found


def python_files(*relative: str) -> list[Path]:
    """The ``.py`` files under (or at) each path relative to the repository root, sorted."""
    files: list[Path] = []
    for rel in relative:
        target = REPO_ROOT / rel
        files += [target] if target.is_file() else sorted(target.rglob("*.py"))
    return [f for f in files if "cdk.out" not in f.parts]


def violations(files: Iterable[Path], forbidden: Iterable[str], *, at_import_only: bool = False) -> list[str]:
    """Imports of ``forbidden`` packages in ``files``, as readable lines (empty when the rule holds).

    ``at_import_only``: only imports that run when the file is imported count (lazy ones are allowed).
    """
    banned = tuple(forbidden)
    return [
        str(imp)
        for path in files
        for imp in imports_of(path)
        if imp.is_of(banned) and (imp.at_import or not at_import_only)
    ]


def import_cycles(files: Iterable[Path]) -> list[list[str]]:
    """The groups of modules among ``files`` that import each other, lazily or not (empty: no cycle).

    A package's ``__init__`` re-exporting its own submodules is not a cycle of concepts, so imports of a
    module's own package are left out. Each group is sorted; groups are found as strongly connected
    components (Tarjan).
    """
    paths = list(files)
    known = {_module_of(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        name = _module_of(path)
        targets = {imp.module for imp in imports_of(path)} & known
        graph[name] = {t for t in targets if t != name and not name.startswith(t + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles
