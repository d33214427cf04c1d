"""No module of the shipped packages imports, directly or through others, a module that imports it back.

A cycle makes the import order matter and hides which concept depends on which; lazy imports count too,
since they only postpone the cycle. Read from the source (:mod:`tests.import_graph`), so nothing is
imported to check it.
"""

from __future__ import annotations

from tests.import_graph import import_cycles, python_files

PACKAGES = ("strands_kokoro", "kokoro_serving", "tts_container", "agentcore_app", "cdk")


def test_the_packages_have_no_import_cycle() -> None:
    assert import_cycles(python_files(*PACKAGES)) == []
