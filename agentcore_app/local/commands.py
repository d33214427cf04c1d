"""``agent-infra demo`` and ``agent-infra serve``: the agent app with everything it needs, on this machine.

Run as ``python -m agentcore_app.local.commands demo|serve ...``; the model server is started through its
command lines (:mod:`agentcore_app.local.stack`). ``demo --local`` (the default without ``--endpoint-url``)
provisions the weights, starts the model server and the app on free ports (the embedded LLM with only the
system prompt read, paced by ``--llm-pace``: :func:`compared_model`), runs :mod:`agentcore_app.local.demo`
against the app and tears it all down. ``serve`` runs the browser voice player and the app behind it (and
the model server, unless ``--speech-endpoint`` names one) on 127.0.0.1 until Ctrl-C. A setting the app
cannot use (checked before anything starts) or a piece that does not come up (``stack.LaunchError``, which
quotes the model server's log) stops either with one line and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from strands.models.model import Model

    from agentcore_app.local.report import LlmSetting

# What a local stack needs besides the demo's own report modules (the model server runs on this Python).
LOCAL_MODULES: tuple[str, ...] = ("onnxruntime", "uvicorn")
LOCAL_LLM_MODULES: tuple[str, ...] = ("xllamacpp",)
MODEL_HELP = "local | bedrock:<id> | openai:<url>[#model]"


# -------------------------------------------------------------------------------------------- demo


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """``--local`` / ``--model`` here, every client option from
    :func:`agentcore_app.local.demo.add_arguments`."""
    from agentcore_app.local import demo, voice_in

    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--local", action="store_true", help="start the model server and the agent app here (the default)"
    )
    demo.add_arguments(parser, target)
    voice_in.add_arguments(parser)
    parser.add_argument("--model", default=None, help=f"with --local (default local): {MODEL_HELP}")
    parser.add_argument(
        "--llm-pace",
        type=float,
        default=None,
        metavar="TOKENS_PER_S",
        help="with --local and the embedded model: release its tokens no faster than this, as a hosted "
        "model streams (50 is typical; default: its own speed)",
    )


@contextlib.asynccontextmanager
async def _local_target(args: argparse.Namespace) -> AsyncIterator[str]:
    """The local stack for as long as the demo runs; yields the agent app's URL."""
    from agentcore_app.local.stack import local_stack, warm_up_model, warm_up_turns

    print("starting the local stack (weights, model server, agent app)...", file=sys.stderr)
    factory = compared_model(args.model, args.llm_pace)
    async with local_stack(args.out_dir, model=args.model, model_factory=factory) as stack:
        await warm_up_turns(stack.agent_url)
        await warm_up_model(args.model)
        print(
            f"agent app {stack.agent_url}, speech {stack.speech_endpoint}, model {stack.model}",
            file=sys.stderr,
        )
        yield stack.agent_url


def compared_model(setting: str, pace: float | None) -> Callable[[], Model] | None:
    """The model factory of a local comparison: for the embedded model, every turn finds the system
    prompt already read and reads the rest fresh (as a served model's prefix cache serves a new caller,
    so neither mode finds the other's prompt cached) and, with ``pace``, its tokens released no faster
    than ``pace`` per second; None (the setting's own model) for any other."""
    if setting != "local":
        return None
    from agentcore_app.agent.local_llm import LocalSmolLM2Model
    from agentcore_app.local.paced_model import PacedModel

    def model() -> Model:
        embedded = LocalSmolLM2Model(cached_prefix="system")
        return embedded if pace is None else PacedModel(embedded, pace)

    return model


def llm_setting(args: argparse.Namespace) -> LlmSetting:
    """What the table says about the LLM of the stack ``--local`` starts."""
    from agentcore_app.local.report import LlmSetting

    if args.model == "local":
        return LlmSetting(
            "local (the embedded SmolLM2-135M-Instruct)", args.llm_pace, prompt_cache="system prompt"
        )
    return LlmSetting(args.model)


def demo_main(args: argparse.Namespace) -> int:
    """``agent-infra demo``: exit status 0 only when both modes produced audio; 2 when extras are missing,
    a setting is unusable or the local stack does not come up."""
    from agentcore_app.local import demo

    llm_pace = getattr(args, "llm_pace", None)
    args.llm_pace = llm_pace
    if llm_pace is not None:
        from agentcore_app.local.paced_model import PaceError, checked_pace

        try:
            checked_pace(llm_pace)
            if args.endpoint_url or (args.model or "local") != "local":
                raise PaceError(
                    "--llm-pace paces the embedded model of the stack --local starts (--model local); "
                    "a hosted model and a running app write at their own pace"
                )
        except PaceError as exc:
            print(f"agent-infra demo: {exc}", file=sys.stderr)
            return 2
    if args.endpoint_url:
        if args.model is not None:  # the app there answers with its own model: say so, not ignore it
            print(
                f"agent-infra demo: --model chooses the model of the app --local starts; the app at "
                f"{args.endpoint_url} answers with its own (STRANDS_KOKORO_MODEL where it runs)",
                file=sys.stderr,
            )
            return 2
        if demo.refuse_missing(demo.REQUIRED_MODULES):
            return 2
        return reported("agent-infra demo", lambda: demo.run(args, args.endpoint_url, args.endpoint_url))
    args.model = args.model or "local"
    needed = [*demo.REQUIRED_MODULES, *LOCAL_MODULES]
    if args.model == "local":
        needed += LOCAL_LLM_MODULES
    if demo.refuse_missing(needed):
        return 2

    def run_locally() -> int:
        check_settings(args.model)
        return demo.run(args, _local_target(args), f"local ({args.model})", llm_setting(args))

    return reported("agent-infra demo", run_locally)


def check_settings(model: str, speech_endpoint: str | None = None) -> None:
    """Raise the app's setting error now, before weights, a model server or the LLM are started: the
    app is built as it will be (the arguments over the environment's settings), and nothing is run."""
    from agentcore_app.app import create_app

    create_app(speech_endpoint=speech_endpoint, model=model)


def reported(prog: str, run: Callable[[], int]) -> int:
    """``run()``; a setting the app cannot use, a piece that did not come up or a target that did not
    answer becomes one line per failure on stderr and exit status 2, as ``python -m agentcore_app`` does.

    ``except*``: a failure inside the local stack's task group arrives wrapped in an exception group.
    """
    from agentcore_app.errors import SETTING_ERRORS
    from agentcore_app.local.demo import TargetError
    from agentcore_app.local.stack import LaunchError

    known: tuple[type[Exception], ...] = (LaunchError, TargetError, *SETTING_ERRORS)
    failures: list[BaseException] = []
    try:
        return run()
    except* known as group:
        failures = list(_leaves(group))
    for failure in failures:
        print(f"{prog}: {failure}", file=sys.stderr)
    return 2


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


# ------------------------------------------------------------------------------------------- serve


def serve_parser() -> argparse.ArgumentParser:
    from agentcore_app.local.stack import MODEL_SERVER_ENGINES
    from kokoro_serving.local_callers import origin_option  # standard library only

    parser = argparse.ArgumentParser(
        prog="agent-infra serve", description="Serve the browser voice player with a local agent stack."
    )
    parser.add_argument(
        "--local", action="store_true", help="run the model server and the agent app here (the default)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="page + agent app port (default: a free one)")
    parser.add_argument("--model", default="local", help=MODEL_HELP)
    parser.add_argument(
        "--speech-endpoint",
        default=None,
        help="use this running model server (ws://host:port, ...) instead of starting one",
    )
    parser.add_argument(
        "--engine",
        choices=MODEL_SERVER_ENGINES,
        default="onnx",
        help="engine of the started model server (default onnx; auto: torch when CUDA is available)",
    )
    parser.add_argument("--threads", type=int, default=None, help="inference threads of the model server")
    parser.add_argument(
        "--cors-origin",
        action="append",
        type=origin_option,
        default=[],
        metavar="ORIGIN",
        help="another origin allowed to call the agent app (local origins always are); repeatable",
    )
    parser.add_argument(
        "--log-dir", type=Path, default=Path("artifacts/serve"), help="where the model server log goes"
    )
    return parser


@contextlib.asynccontextmanager
async def _speech_endpoint(args: argparse.Namespace) -> AsyncIterator[str]:
    """The given speech endpoint, or a model server started here for as long as the page is served."""
    if args.speech_endpoint:
        yield args.speech_endpoint
        return
    from agentcore_app.local.stack import model_server, provision_weights

    print("starting the model server (weights are fetched on first use)...", file=sys.stderr)
    await provision_weights()
    log = args.log_dir / "model_server.log"
    async with model_server(log, engine=args.engine, threads=args.threads) as server:
        yield server.ws_url


async def serve(args: argparse.Namespace) -> None:
    """Serve until interrupted (Ctrl-C): uvicorn handles the signal, then the model server is stopped."""
    from agentcore_app.app import create_app, server_settings
    from agentcore_app.local.player import page_url, with_page
    from agentcore_app.local.stack import serve_until_stopped, warm_up_model

    async with _speech_endpoint(args) as speech_endpoint:
        await warm_up_model(args.model)
        app = with_page(
            create_app(speech_endpoint=speech_endpoint, model=args.model), cors_origins=args.cors_origin
        )

        def announce(url: str) -> None:
            print(f"speech {speech_endpoint}, model {args.model}", file=sys.stderr)
            print(f"voice player: {page_url(url)}", flush=True)

        await serve_until_stopped(
            app, host=args.host, port=args.port, on_started=announce, **server_settings()
        )


def serve_main(argv: Sequence[str] | None = None) -> int:
    """``agent-infra serve``; returns the exit status (2: an unusable setting, a piece that did not start)."""
    args = serve_parser().parse_args(argv)

    def run() -> int:
        from agentcore_app.local.stack import LaunchError
        from kokoro_serving.ports import unusable_port

        if (refused := unusable_port(args.host, args.port)) is not None:
            raise LaunchError(refused)  # before the weights, the model server and the LLM are started
        check_settings(args.model, args.speech_endpoint)
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args))
        return 0

    return reported("agent-infra serve", run)


DEMO_HELP = "hear the agent speak; bidi vs batch first-audio time"


def demo_parser() -> argparse.ArgumentParser:
    """``agent-infra demo``'s options, as a parser of its own (``prog`` names the command)."""
    parser = argparse.ArgumentParser(prog="agent-infra demo", description=DEMO_HELP)
    add_demo_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``demo ...`` or ``serve ...``: each parses its own options (a bad flag shows that command's usage)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    command, rest = (args_list[0], args_list[1:]) if args_list else ("", [])
    if command == "demo":
        return demo_main(demo_parser().parse_args(rest))
    if command == "serve":
        return serve_main(rest)
    argparse.ArgumentParser(prog="agent-infra").error(
        f"unknown command {command!r} (choose from demo, serve)"
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
