"""The weight modules import one way, and the console script enters the CLI directly.

``weights.cache`` (cache) <- ``weights.conversion`` (the checkpoint from the int8 export) <-
``weights.sources`` (where from) <- ``weights.provisioning`` (production wiring) <- ``weights.cli`` and the
engines. Imports inside functions count: the old cycle hid in two of them.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import tts_container

PACKAGE = Path(tts_container.__file__).parent
REPO = PACKAGE.parent
WEIGHT_MODULES = (
    "weights.cache",
    "weights.lock",
    "weights.conversion",
    "weights.sources",
    "weights.provisioning",
    "weights.cli",
)


def imported_package_modules(module: str) -> set[str]:
    """Every ``tts_container.*`` module ``module`` imports, at any depth of its source (functions too)."""
    tree = ast.parse((PACKAGE / f"{module.replace('.', '/')}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    inside = {name.removeprefix("tts_container.") for name in found if name.startswith("tts_container.")}
    return {name for name in inside if (PACKAGE / f"{name.replace('.', '/')}.py").exists()}


def test_the_cache_module_imports_no_source_and_no_front_end() -> None:
    assert imported_package_modules("weights.cache") == {"weights.lock"}
    assert imported_package_modules("weights.lock") == set()


def test_the_weight_modules_form_no_cycle() -> None:
    graph = {module: imported_package_modules(module) & set(WEIGHT_MODULES) for module in WEIGHT_MODULES}
    assert graph == {
        "weights.cache": {"weights.lock"},
        "weights.lock": set(),
        "weights.conversion": {"weights.cache"},
        "weights.sources": {"weights.cache", "weights.conversion"},
        "weights.provisioning": {"weights.cache", "weights.sources"},
        "weights.cli": {"weights.cache", "weights.sources", "weights.provisioning"},
    }
    order = [
        "weights.lock",
        "weights.cache",
        "weights.conversion",
        "weights.sources",
        "weights.provisioning",
        "weights.cli",
    ]
    for position, module in enumerate(order):  # a topological order exists: no cycle
        assert graph[module] <= set(order[:position])


def test_engines_provision_through_the_production_wiring() -> None:
    for engine in ("engines.onnx_engine", "engines.torch_engine"):
        imported = imported_package_modules(engine)
        assert "weights.provisioning" in imported and "weights.sources" not in imported


def test_the_console_script_points_at_the_cli_module_and_the_shim_is_gone() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, attribute = scripts["kokoro-weights"].partition(":")
    assert (module, attribute) == ("tts_container.weights.cli", "main")
    assert callable(getattr(importlib.import_module(module), attribute))
    assert not hasattr(importlib.import_module("tts_container.weights.cache"), "main")


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tts_container.weights.cli", "path", "--cache-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == str(tmp_path)
