"""Helpers for the CDK tests: a stand-in weight cache, and readers of a synthesized cloud assembly."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template

PROFILE_MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
WEIGHT_FILES = ("config.json", "kokoro-v1.0.int8.onnx", "voices.npz")
# What the real cache directory holds beside the weights (conversations are kept there by default).
NOT_WEIGHTS = {
    "conversations/session_demo-0123456789abcdef0123456789abcdef-bidi/agents/agent_default/messages/"
    "message_0.json": '{"text": "My cat is called Tom."}',
    "whisper-base/config.json": "{}",
    "norm-stats/af_heart.npz": "stand-in",
    ".lock": "",
    ".staging-1234/voices.npz.part": "half a download",
}


def write_fake_weights_cache(root: Path, names: tuple[str, ...] = WEIGHT_FILES) -> Path:
    """Tiny stand-ins for the weight files plus a manifest in ``tts_container.weights.cache``'s format."""
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, Any] = {}
    for name in names:
        data = f"stand-in for {name}\n".encode()
        (root / name).write_bytes(data)
        files[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "source": "test"}
    (root / "manifest.json").write_text(json.dumps({"version": 1, "files": files}), encoding="utf-8")
    return root


@dataclass(frozen=True)
class Synthesized:
    """The cloud assembly on disk: templates, asset manifests, metadata and cdk-nag's report."""

    outdir: Path

    def template_json(self, stack: str) -> dict[str, Any]:
        return dict(json.loads((self.outdir / f"{stack}.template.json").read_text()))

    def assets(self, stack: str) -> dict[str, Any]:
        return dict(json.loads((self.outdir / f"{stack}.assets.json").read_text()))

    def acknowledgments(self, stack: str) -> dict[str, dict[str, str]]:
        """Construct path -> {rule id: reason}, as CDK records them in the stack's metadata."""
        metadata = json.loads((self.outdir / f"{stack}.metadata.json").read_text())
        found: dict[str, dict[str, str]] = {}
        for path, entries in metadata.items():
            for entry in entries:
                if entry["type"] == "aws:cdk:acknowledged-rules":
                    found.setdefault(path, {}).update(entry["data"])
        return found

    def validation_report(self) -> dict[str, Any]:
        return dict(json.loads((self.outdir / "validation-report.json").read_text()))


# The speech stacks, by name.
FOUNDATION, CACHE, ENDPOINT = "KokoroSpeechFoundation", "KokoroModelCache", "KokoroSpeechEndpoint"


def template(synthesized: Synthesized, stack: str) -> Template:
    return Template.from_json(synthesized.template_json(stack))


def only(resources: dict[str, Any]) -> dict[str, Any]:
    assert len(resources) == 1, list(resources)
    return next(iter(resources.values()))


def alarms_by_metric(t: Template) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for alarm in t.find_resources("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        assert props["MetricName"] not in found, props["MetricName"]
        found[props["MetricName"]] = props
    return found
