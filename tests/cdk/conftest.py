"""One real synth of the whole CDK app (all five stacks, cdk-nag on), shared by the tests of this folder.

Synth costs 20-60 s here (jsii starts node; two Docker contexts are hashed), so it runs once per test
session. The weight cache is a stand-in (`fake_weights_cache`): tiny files in the real cache layout with
a real manifest, because the real cache is ~100-400 MB and the stacks only read its manifest and copy it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cdk.synth_support import NOT_WEIGHTS, PROFILE_MODEL_ID, Synthesized, write_fake_weights_cache

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


@pytest.fixture(scope="session")
def fake_weights_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The weights, and what else the real cache directory holds beside them (none of it is weights)."""
    root = write_fake_weights_cache(tmp_path_factory.mktemp("weights"))
    for name, text in NOT_WEIGHTS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory, fake_weights_cache: Path) -> Iterator[Synthesized]:
    from cdk.app import build_app

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = build_app(
        {"kokoro:weights_dir": str(fake_weights_cache), "kokoro:bedrock_model_id": PROFILE_MODEL_ID},
        outdir=str(outdir),
    )
    app.synth()  # raises when cdk-nag reports anything unacknowledged
    yield Synthesized(outdir)
