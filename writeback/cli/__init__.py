"""The command line: one error boundary that maps our errors to exit codes.

Exit codes (every command follows them; ``writeback.errors.ExitCode``, and ``writeback.cli.exits`` for the rule):
  0    success
  1    drift found, only with ``--exit-code`` (as ``git diff --exit-code``)
  2    a usage, config or input error; the message names the file, key or resource
  3    at least one target failed at run time while the others ran
  130  interrupted
Tracebacks are printed only with ``--debug``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import sys
import traceback
from collections.abc import Sequence

from writeback import __version__
from writeback.errors import ExitCode, InputError, WritebackError

# Each module exposes ``register(subparsers)``; the parser's ``func`` returns an exit code.
COMMAND_MODULES: tuple[str, ...] = (
    "writeback.cli.diff",
    "writeback.cli.plan",
    "writeback.cli.run",
    "writeback.cli.config_cmd",
    "writeback.cli.breakglass",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise InputError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="writeback",
        description="Write a person's live Kubernetes changes back into the GitOps repo as reviewed pull requests.",
    )
    parser.add_argument("--version", action="version", version=f"writeback {__version__}")
    parser.add_argument("--debug", action="store_true", help="print tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _quiet_urllib3(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.ERROR or not record.name.startswith("urllib3")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    fresh = not logging.getLogger().handlers
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if fresh and not debug:  # urllib3 warns on every connection retry; our error says what failed, once
        logging.getLogger().handlers[0].addFilter(_quiet_urllib3)
    try:
        parser = build_parser()
        args = parser.parse_args(args_list)
        if args.command == "run" and not args.once:
            gc.enable()  # the service runs for good: it needs the cyclic collector (see entrypoint)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return ExitCode.OK
        code = func(args)
        return int(code)
    except KeyboardInterrupt:
        print("writeback: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except WritebackError as e:
        if debug:
            traceback.print_exc()
        print(f"writeback: error: {e}", file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:
        return ExitCode.OK
    except Exception as e:  # the one boundary: anything unexpected is a run-time failure
        if debug:
            traceback.print_exc()
        print(f"writeback: unexpected error: {type(e).__name__}: {e} (run with --debug for details)", file=sys.stderr)
        return ExitCode.FAILED


def entrypoint() -> None:
    # A command's process exits when the command is done: Python's cyclic collector would only walk the millions of
    # objects that imports and a cycle build, which reference counting frees (at 10,000 objects, a full collection
    # after the cycle costs about half a second). Off for the process, except for the service (``main``).
    gc.disable()
    sys.exit(main())
