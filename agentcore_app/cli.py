"""``agent-infra``: one console script for the agent side.

- ``demo``                            compare bidi and batch speech on one prompt (:mod:`agentcore_app.demo`)
- ``serve``                           the browser voice player (``agentcore_app.serve``)
- ``deploy | diff | synth | destroy`` the CDK app (``cdk.cli.agent_infra``)

Subcommands owned by other modules are imported only when chosen, so ``demo`` never loads the CDK
(jsii + node) and ``deploy`` never loads the LLM.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

CDK_COMMANDS = ("deploy", "diff", "synth", "destroy")


def build_parser() -> argparse.ArgumentParser:
    from agentcore_app import demo

    parser = argparse.ArgumentParser(prog="agent-infra", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo_parser = commands.add_parser("demo", help="hear the agent speak; bidi vs batch first-audio time")
    demo.add_arguments(demo_parser)
    commands.add_parser("serve", help="browser voice player (see `agent-infra serve --help`)", add_help=False)
    for name in CDK_COMMANDS:
        commands.add_parser(name, help=f"cdk {name} of the agent stack", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Delegated commands parse their own flags: everything after the command word is theirs.
    if args_list and args_list[0] == "serve":
        from agentcore_app.serve import main as serve_main

        return int(serve_main(args_list[1:]) or 0)
    if args_list and args_list[0] in CDK_COMMANDS:
        from cdk.cli import agent_infra

        return int(agent_infra(args_list) or 0)
    args = build_parser().parse_args(args_list)
    from agentcore_app import demo

    return demo.main(args)


if __name__ == "__main__":
    sys.exit(main())
