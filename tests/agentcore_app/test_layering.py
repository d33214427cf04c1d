"""``agentcore_app`` is the deployable app and its local launchers and clients: it depends on
``strands_kokoro`` and ``kokoro_serving`` and nothing above; the deployed app imports nothing of ``local/``.

Its Docker image carries only ``strands_kokoro``, ``kokoro_serving`` and ``agentcore_app``; the CDK app
depends on it, never the reverse (architecture §2). Read from the source, so an import hidden inside a
function counts too.
"""

from __future__ import annotations

from pathlib import Path

from tests.import_graph import REPO_ROOT, imports_of, python_files, violations

# The other top-level folders of the repository: none of them ships in the agent image.
ABOVE_OR_BESIDE = ("cdk", "tts_container", "benchmarks", "tests", "examples")


def test_agentcore_app_imports_no_launcher_server_or_cdk_module() -> None:
    assert violations(python_files("agentcore_app"), ABOVE_OR_BESIDE) == []


def test_the_deployed_app_imports_nothing_of_the_local_launchers_and_clients() -> None:
    local = REPO_ROOT / "agentcore_app" / "local"
    deployed = [path for path in python_files("agentcore_app") if not path.is_relative_to(local)]
    assert violations(deployed, ("agentcore_app.local",)) == []


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    """The rule would catch a lazy import (such as one reaching ``cdk.cli`` or ``tts_container``)."""
    probe = tmp_path / "probe.py"
    source = (
        "import json\nif TYPE_CHECKING:\n    import cdk\n\ndef later():\n    from cdk.cli import agent_main\n"
    )
    probe.write_text(source, encoding="utf-8")
    found = {(i.module, i.at_import) for i in imports_of(probe)}
    assert found == {("json", True), ("cdk", False), ("cdk.cli", False), ("cdk.cli.agent_main", False)}
    assert len(violations([probe], ABOVE_OR_BESIDE)) == 3
    assert violations([probe], ABOVE_OR_BESIDE, at_import_only=True) == []
