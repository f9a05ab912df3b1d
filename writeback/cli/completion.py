"""``writeback completion bash|zsh``: the shell completion script, generated from the parser tree by shtab.

    eval "$(writeback completion bash)"                 # ~/.bashrc
    writeback completion zsh > "${fpath[1]}/_writeback"  # zsh, then restart it

The script is static (no Python runs on <TAB>); flags that take a file or a directory complete paths.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from writeback.cli.exits import Tally
from writeback.cli.helptext import summary

SHELLS = ("bash", "zsh", "fish")
_FILE_METAVARS = {"FILE", "PATH"}
_DIR_METAVARS = {"DIR", "SUBDIR"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "completion",
        help=summary("completion"),
        description="Print a tab-completion script for bash or zsh: commands, subcommands, flags, their choices, "
        "and paths for the flags that take a file or a directory.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(func=run)


def _mark_paths(parser: argparse.ArgumentParser) -> None:
    import shtab

    from writeback.cli.helptext import walk

    for _, p in walk(parser):
        for action in p._actions:
            if action.metavar in _FILE_METAVARS:
                action.complete = shtab.FILE  # type: ignore[attr-defined]
            elif action.metavar in _DIR_METAVARS:
                action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]


def script(shell: str, *, prog: str = "writeback") -> str:
    """The completion script of ``shell`` for the whole command tree."""
    import shtab

    from writeback.cli import build_parser

    parser = build_parser(prog=prog)
    _mark_paths(parser)
    return str(shtab.complete(parser, shell=shell))


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(script(args.shell))
    return Tally().exit_code()
