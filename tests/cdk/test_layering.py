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
CDK_APP = ("cdk/app.py", "cdk/stacks", "cdk/config.py", "cdk/tooling.py")
LAUNCHERS = ("cdk/cli.py", "cdk/local_commands.py", "cdk/local_stack.py")


def test_the_cdk_app_and_its_stacks_import_no_wing() -> None:
    assert violations(python_files(*CDK_APP), WINGS) == []


def test_cdk_reaches_tts_container_only_through_its_command_lines() -> None:
    assert violations(python_files("cdk"), ["tts_container"]) == []


def test_launchers_import_the_agent_side_only_inside_their_commands() -> None:
    lazy_only = ("agentcore_app", "strands", "strands_kokoro", "xllamacpp", "uvicorn")
    assert violations(python_files(*LAUNCHERS), lazy_only, at_import_only=True) == []


def test_importing_the_cli_loads_no_wing_no_llm_and_no_cdk() -> None:
    probe = (
        "import json, sys\n"
        "import cdk.cli, cdk.local_commands, cdk.local_stack\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    heavy = ("agentcore_app", "tts_container", "strands", "xllamacpp", "aws_cdk", "constructs", "jsii")
    assert [m for m in loaded if m.split(".")[0] in heavy] == []
