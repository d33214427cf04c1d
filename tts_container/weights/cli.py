"""``kokoro-weights``: fill or check the weight cache ahead of time (Dockerfile build step, CI, a laptop).

    kokoro-weights fetch [--cache-dir D] [--part onnx|torch] [--source dir|s3|hub|registry ...]
                         [--source-dir D] [--s3-uri s3://bucket/prefix] [--no-derive]
    kokoro-weights verify|path [--cache-dir D]

Exit 0 on success; 1 listing every source tried when none had the weights. Unless ``--no-derive``,
``--part torch`` derives the checkpoint from the onnx part and ``--part onnx`` the static int8 vocoder
(and builds its AdaSnake operator where a C compiler is there).
``verify`` checks the pins too ("is this the pinned Kokoro-82M", not only "is it intact").
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tts_container.weights.cache import (
    ONNX_FILE,
    TORCH_FILE,
    WeightsSource,
    WeightsUnavailable,
    default_cache_dir,
    read_manifest,
    verify_cache,
)
from tts_container.weights.provisioning import ensure_weights
from tts_container.weights.sources import (
    PINNED_SHA256,
    DirectorySource,
    HubSource,
    RegistryPackagesSource,
    S3Source,
    default_sources,
)

SOURCE_NAMES = ("dir", "s3", "hub", "registry")


def _sources(
    names: Sequence[str] | None, source_dir: str | None, s3_uri: str | None
) -> Sequence[WeightsSource]:
    if not names:
        return default_sources(source_dir, s3_uri)
    by_name: dict[str, WeightsSource] = {
        "dir": DirectorySource(source_dir),
        "s3": S3Source(s3_uri),
        "hub": HubSource(),
        "registry": RegistryPackagesSource(),
    }
    return [by_name[name] for name in names]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kokoro-weights", description="Provision the Kokoro-82M weight cache."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="fill the cache from the first source that works")
    fetch.add_argument(
        "--part", choices=("onnx", "torch"), action="append", help="engine files (default onnx)"
    )
    fetch.add_argument(
        "--source", choices=SOURCE_NAMES, action="append", help="try only these, in this order"
    )
    fetch.add_argument("--source-dir", help="a directory laid out like the cache")
    fetch.add_argument("--s3-uri", help="an s3:// model cache laid out like the cache")
    fetch.add_argument(
        "--no-derive",
        action="store_true",
        help="the weights as the sources have them: no torch checkpoint or static int8 vocoder derived",
    )
    for command in (fetch, commands.add_parser("verify", help="re-hash every cached file")):
        command.add_argument(
            "--cache-dir", type=Path, help="default: $STRANDS_KOKORO_CACHE or ~/.cache/strands-kokoro"
        )
    commands.add_parser("path", help="print the cache directory").add_argument("--cache-dir", type=Path)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``kokoro-weights`` command line (the console script's entry point)."""
    args = _parser().parse_args(argv)
    cache_dir: Path = args.cache_dir or default_cache_dir()
    if args.command == "path":
        print(cache_dir)
        return 0
    if args.command == "verify":
        problems = verify_cache(cache_dir, pins=PINNED_SHA256)
        for problem in problems:
            print(f"kokoro-weights: {problem}", file=sys.stderr)
        print("ok" if not problems else f"{len(problems)} problem(s)")
        return 1 if problems else 0
    sources = _sources(args.source, args.source_dir, args.s3_uri)
    for part in args.part or ["onnx"]:
        started = time.perf_counter()
        try:
            weights = ensure_weights(cache_dir, part=part, sources=sources, derive=not args.no_derive)
        except WeightsUnavailable as exc:
            print(f"kokoro-weights: {exc}", file=sys.stderr)
            return 1
        source = (
            read_manifest(weights.root).get(TORCH_FILE if part == "torch" else ONNX_FILE, {}).get("source")
        )
        print(f"{part}: {weights.root} ready in {time.perf_counter() - started:.1f} s (from {source})")
        if part == "onnx" and not args.no_derive:
            _derive_static_vocoder(cache_dir)
    return 0


def _derive_static_vocoder(cache_dir: Path) -> None:
    """Have the onnx engine's static-int8 vocoder and AdaSnake operator in the cache, so a server's first
    start skips their derivation (:mod:`tts_container.engines.static_int8`,
    :mod:`tts_container.engines.ada_snake`); loading the engine derives what is missing."""
    from tts_container.engines.onnx_engine import OnnxEngine

    started = time.perf_counter()
    engine = OnnxEngine.from_cache(cache_dir)
    print(f"onnx: {', '.join(engine.variants)} vocoders ready in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
