"""Who may import what in ``cdk/``: nothing of the packages it deploys, even lazily.

- ``cdk/app.py``, ``cdk/stacks/``, ``cdk/config.py``, ``cdk/tooling.py`` (what synthesizes and deploys)
  import none of ``agentcore_app``, ``tts_container``, ``strands_kokoro``, ``kokoro_serving``: they are
  Docker build contexts to them (architecture §2).
- ``cdk/cli.py`` runs the launchers as command lines (``python -m agentcore_app.local.commands``, which
  runs ``python -m tts_container`` and ``python -m tts_container.weights.cli``), so ``speech-infra``
  never loads strands or the LLM; importing ``cdk.cli`` loads neither them nor the CDK (jsii starts node).
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.import_graph import python_files, violations

WINGS = ("agentcore_app", "tts_container", "strands_kokoro", "kokoro_serving")


def test_cdk_imports_no_wing() -> None:
    assert violations(python_files("cdk"), WINGS) == []


def test_the_cdk_app_and_its_stacks_import_no_strands() -> None:
    assert violations(python_files("cdk"), ("strands", "xllamacpp", "uvicorn")) == []


def test_importing_the_cli_loads_no_wing_no_llm_and_no_cdk() -> None:
    probe = "import json, sys\nimport cdk.cli\nprint(json.dumps(sorted(sys.modules)))\n"
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    heavy = (
        "agentcore_app",
        "tts_container",
        "kokoro_serving",
        "strands",
        "xllamacpp",
        "aws_cdk",
        "constructs",
        "jsii",
    )
    assert [m for m in loaded if m.split(".")[0] in heavy] == []
