"""Who may import what in ``cdk/``: the CDK app sees no wing; the launchers see them only as they may.

- ``cdk/app.py``, ``cdk/stacks/``, ``cdk/config.py``, ``cdk/tooling.py`` (what synthesizes and deploys)
  import none of ``agentcore_app``, ``tts_container``, ``strands_kokoro``: the wings are Docker build
  contexts to them (architecture §2).
- Nothing in ``cdk/`` imports ``tts_container``: the launchers run its command lines
  (``python -m tts_container``, ``python -m tts_container.weights_cli``) as subprocesses.
- The launchers (``cli.py``, ``local_commands.py``, ``local_stack.py``) import ``agentcore_app`` and
  strands only inside the commands, so ``speech-infra`` never loads strands or the LLM; importing
  ``cdk.cli`` loads neither them nor the CDK (jsii starts node).
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.import_graph import python_files, violations

WINGS = ("agentcore_app", "tts_container", "strands_kokoro")


def test_cdk_imports_no_wing() -> None:
    assert violations(python_files("cdk"), WINGS) == []


def test_the_cdk_app_and_its_stacks_import_no_strands() -> None:
    assert violations(python_files("cdk"), ("strands", "xllamacpp", "uvicorn")) == []


def test_importing_the_cli_loads_no_wing_no_llm_and_no_cdk() -> None:
    probe = "import json, sys\nimport cdk.cli\nprint(json.dumps(sorted(sys.modules)))\n"
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    heavy = ("agentcore_app", "tts_container", "strands", "xllamacpp", "aws_cdk", "constructs", "jsii")
    assert [m for m in loaded if m.split(".")[0] in heavy] == []
