"""``python -m tts_container``: serve the Kokoro model locally (127.0.0.1 by default).

SageMaker runs ``tts_container/serve`` instead, which calls this with ``--host 0.0.0.0 --port 8080``.
"""

from __future__ import annotations

import argparse
import functools
import logging
import sys
from collections.abc import Sequence
from typing import Any

import uvicorn

from kokoro_serving.local_callers import origin_option
from kokoro_serving.ports import unusable_port
from kokoro_serving.uvicorn_protocol import uvicorn_settings
from strands_kokoro.protocol import MAX_MESSAGE_BYTES
from tts_container.app import create_app, refusal
from tts_container.engines.base import Engine
from tts_container.engines.loader import ENGINE_NAMES
from tts_container.reporting import metric_lines

# Frames above this size are refused by the WebSocket layer itself (close code 1009); frames between
# the protocol's MAX_MESSAGE_BYTES and this get a coded `message_too_large` error and the session goes on.
WS_MAX_FRAME_BYTES = 16 * MAX_MESSAGE_BYTES
# uvicorn's WebSocket settings (the tests' in-process servers use the same). permessage-deflate is off:
# PCM does not compress, and with it a 100-byte frame inflates to a 1 MiB message; uvicorn parses and
# queues every frame of one read at once, so a flooding client's memory grows with the ratio.
WS_OPTIONS: dict[str, Any] = {"ws_max_size": WS_MAX_FRAME_BYTES, "ws_per_message_deflate": False}
# Everything uvicorn is told (the tests' in-process servers and the soak use the same): the WebSocket
# settings above and the deadlines for silent peers (kokoro_serving: headers 10 s, the
# WebSocket keep-alive of SageMaker's contract).
SERVER_OPTIONS: dict[str, Any] = {
    **WS_OPTIONS,
    **uvicorn_settings(refusal),
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    # The docstring without its reST quotes: argparse shows the description as plain text.
    parser = argparse.ArgumentParser(prog="python -m tts_container", description=__doc__.replace("``", ""))
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8080, help="port to bind (default: %(default)s)")
    parser.add_argument(
        "--engine",
        choices=ENGINE_NAMES,
        default="auto",
        help="inference engine; auto picks torch when CUDA is available, else onnx (default: %(default)s)",
    )
    parser.add_argument(
        "--threads", type=_positive, default=None, help="engine CPU threads (default: all cores)"
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        type=origin_option,
        default=[],
        metavar="ORIGIN",
        help="a browser origin (scheme://host[:port]) allowed to open a WebSocket session; repeatable. "
        "Any other Origin is refused (SageMaker and the Python clients send none)",
    )
    parser.add_argument(
        "--idle-calibration",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="on a CPU, fit each voice requested for streaming in the server's idle time (default: on; "
        "off: voices other than af_heart are rendered whole, their first audio after the whole sentence)",
    )
    parser.add_argument(
        "--max-batch",
        type=_positive,
        default=None,
        help="torch engine: render up to this many listeners' windows in one forward pass of the "
        "generator (1: one at a time; default: 32 on CUDA, 1 on a CPU)",
    )
    parser.add_argument(
        "--max-listeners",
        type=_positive,
        default=None,
        help="admit this many listeners at once instead of the number the server measures from its own "
        "speed (a figure measured with benchmarks.capacity on this instance type, say; default: measured)",
    )
    return parser.parse_args(argv)


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (``--threads 0`` would mean nothing to run on)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _load(engine: str, threads: int | None, max_batch: int | None = None) -> Engine:
    # Imported here: the loader pulls in onnxruntime/torch, which only the loading thread needs.
    from tts_container.engines.loader import load_engine

    return load_engine(engine, threads, max_batch=max_batch)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    # Before the model loads: uvicorn binds only after the app's start-up, and the engine's load (tens of
    # seconds on a CPU) cannot be interrupted on the way out.
    if (refused := unusable_port(args.host, args.port)) is not None:
        print(f"error: {refused}", file=sys.stderr)
        raise SystemExit(3)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    metric_lines.configure()
    app = create_app(
        functools.partial(_load, args.engine, args.threads, args.max_batch),
        allowed_origins=args.allow_origin,
        idle_calibration=args.idle_calibration,
        max_listeners=args.max_listeners,
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", **SERVER_OPTIONS)


if __name__ == "__main__":
    main()
