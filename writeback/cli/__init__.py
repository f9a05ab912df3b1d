"""The command line: one parser tree, one error boundary that maps our errors to exit codes.

Exit codes (every command follows them; ``writeback.errors.ExitCode``, and ``writeback.cli.exits`` for the rule):
  0    success
  1    drift found, only with ``--exit-code`` (as ``git diff --exit-code``)
  2    a usage, config or input error; the message names the file, key or resource
  3    at least one target failed at run time while the others ran
  130  interrupted
Tracebacks are printed only with ``--debug``.

Conventions (``writeback.cli.output``): stdout carries only the requested output, notes, warnings and problems go
to stderr once; global options (``--debug``, ``--color``) work before or after the subcommand; a usage error prints
the failing subcommand's usage and one ``writeback: error:`` line. Installed as ``kubectl-writeback`` too, the
program calls itself ``kubectl writeback``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from writeback import __version__
from writeback.cli.exits import leave
from writeback.cli.helptext import Formatter, attach, summary, walk
from writeback.cli.output import ColorMode, Printer
from writeback.errors import ExitCode, InputError, WritebackError

# Each command's module exposes ``register(subparsers)``; the parser's ``func`` returns an exit code. Only the module
# of the command being run is imported (``build_parser``): ``writeback --version`` and ``--help`` import none, and a
# command imports what it works with only when it runs (docs/cli.md, "Startup").
COMMAND_MODULES: dict[str, str] = {
    "diff": "writeback.cli.diff",
    "plan": "writeback.cli.plan",
    "run": "writeback.cli.run",
    "config": "writeback.cli.config_cmd",
    "break-glass": "writeback.cli.breakglass",
    "completion": "writeback.cli.completion",
}
PLUGIN_NAME = "kubectl-writeback"  # the console script kubectl finds on PATH: `kubectl writeback diff ...`
GLOBAL_OPTIONS = ("--debug", "--color")


class UsageError(InputError):
    """A command line argparse refused; ``parser`` is the (sub)command whose usage to show."""

    def __init__(self, message: str, *, parser: argparse.ArgumentParser) -> None:
        super().__init__(message)
        self.parser = parser


def add_global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``--debug`` and ``--color`` on every parser of the tree. Below the top their defaults are suppressed, so a
    subcommand that does not see the option leaves the value the top parser set."""
    g = parser.add_argument_group("global options (before or after the command)")
    g.add_argument(
        "--debug", action="store_true", default=False if top else argparse.SUPPRESS,
        help="print tracebacks and debug logs",
    )  # fmt: skip
    g.add_argument(
        "--color", choices=[m.value for m in ColorMode], metavar="WHEN",
        default=ColorMode.AUTO.value if top else argparse.SUPPRESS,
        help="colour the output: auto (on a terminal, unless NO_COLOR is set), always or never (default: auto)",
    )  # fmt: skip


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, top: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        kwargs["allow_abbrev"] = False  # as kubectl, flux and argocd: `--rep` is no `--repo-url`
        super().__init__(*args, **kwargs)
        add_global_options(self, top=top)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message, parser=self)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """As argparse, but unrecognized arguments are reported by the subcommand they were given to."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            chosen(self, parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The deepest (sub)command parser that ``args`` selected."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            if name in action.choices:
                return chosen(action.choices[name], args)
    return parser


def prog_name(argv0: str | None = None) -> str:
    name = os.path.basename(argv0 if argv0 is not None else sys.argv[0])
    return "kubectl writeback" if name == PLUGIN_NAME else "writeback"


def command_in(args: Sequence[str]) -> str | None:
    """The command a command line runs: its first word that is no global option (nor ``--color``'s value)."""
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "--color":
            skip = True
        elif a == "--":
            return None
        elif not a.startswith("-"):
            return a
    return None


def build_parser(*, prog: str = "writeback", argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser tree. With ``argv``, only the command it runs gets its flags (its module is imported); the others
    are listed with their one-line help. Without it, the whole tree (completion scripts, tests)."""
    parser = _Parser(
        prog=prog,
        top=True,
        description="Write a person's live Kubernetes changes back into the GitOps repo as reviewed pull requests.",
    )
    parser.add_argument("--version", action="version", version=f"writeback {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    wanted = command_in(argv) if argv is not None else None
    listed: set[tuple[str, ...]] = set()
    for name, module in COMMAND_MODULES.items():
        if argv is None or name == wanted:
            importlib.import_module(module).register(sub)
        else:
            sub.add_parser(name, help=summary(name))
            listed.add((name,))
    attach(parser, skip=frozenset(listed))
    return parser


def subparsers(parser: argparse.ArgumentParser) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every parser of the tree by command path (for completion and tests)."""
    return dict(walk(parser))


def _quiet_urllib3(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.ERROR or not record.name.startswith("urllib3")


class _StderrNow(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``sys.stderr`` as it is when a record is emitted, so that a progress display that redirects stderr
    (rich's) prints the record above itself instead of through it."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class _Said(logging.Formatter):
    """A log record as every other message of a command: ``writeback: error: ...`` (the level in colour on a
    terminal); with ``--debug`` the logger's name follows the level. The service logs in its own format
    (``writeback.service.logging``: text or JSON lines)."""

    def __init__(self, printer: Printer, *, debug: bool) -> None:
        super().__init__()
        self.printer, self.debug = printer, debug

    def format(self, record: logging.LogRecord) -> str:
        kind = {"WARNING": "warning", "CRITICAL": "error"}.get(record.levelname, record.levelname.lower())
        label = self.printer.err_color.paint(f"{kind}:", kind)
        name = f"{record.name}: " if self.debug else ""
        text = f"writeback: {label} {name}{record.getMessage()}"
        if record.exc_info and self.debug:
            text += "\n" + self.formatException(record.exc_info)
        return text


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    fresh = not logging.getLogger().handlers
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if fresh and not debug:  # urllib3 warns on every connection retry; our error says what failed, once
        logging.getLogger().handlers[0].addFilter(_quiet_urllib3)
    printer = Printer.for_mode(_color_in(args_list))
    if fresh:  # our own handler: say log records as the command says everything else, above any progress display
        root = logging.getLogger()
        handler = _StderrNow()
        handler.setFormatter(_Said(printer, debug=debug))
        handler.filters = root.handlers[0].filters
        root.handlers[0] = handler
    try:
        parser = build_parser(prog=prog or prog_name(), argv=args_list)
        args = parser.parse_args(args_list)
        printer = Printer.from_args(args)
        logging.getLogger(__name__).debug("writeback %s (Python %s): %s", __version__, sys.version.split()[0],
                                          " ".join(chosen(parser, args).prog.split()[1:]) or "-")  # fmt: skip
        if args.command == "run" and not args.once:
            gc.enable()  # the service runs for good: it needs the cyclic collector (see entrypoint)
        func = getattr(args, "func", None)
        if func is None:  # a bare `writeback` (or `writeback config`): its help, as a usage error (like git)
            chosen(parser, args).print_help(sys.stderr)
            return ExitCode.INPUT
        code = func(args)
        return int(code)
    except KeyboardInterrupt:
        printer.say("error", "interrupted")
        return ExitCode.INTERRUPTED
    except UsageError as e:
        e.parser.print_usage(sys.stderr)
        printer.say("error", str(e))
        return e.exit_code
    except WritebackError as e:
        if debug:
            traceback.print_exc()
        printer.say("error", str(e))
        return e.exit_code
    except BrokenPipeError:
        return ExitCode.OK
    except Exception as e:  # the one boundary: anything unexpected is a run-time failure
        if debug:
            traceback.print_exc()
        printer.say("error", f"unexpected {type(e).__name__}: {e} (run with --debug for details)")
        return ExitCode.FAILED


def _color_in(args: Sequence[str]) -> str:
    """``--color`` as given, for the messages of a command line argparse refuses."""
    for i, a in enumerate(args):
        if a.startswith("--color="):
            value = a.split("=", 1)[1]
        elif a == "--color" and i + 1 < len(args):
            value = args[i + 1]
        else:
            continue
        if value in {m.value for m in ColorMode}:
            return value
    return ColorMode.AUTO.value


def entrypoint() -> None:
    # A command's process exits when the command is done: Python's cyclic collector would only walk the millions of
    # objects that imports and a cycle build, which reference counting frees (at 10,000 objects, a full collection
    # after the cycle costs about half a second). Off for the process, except for the service (``main``).
    gc.disable()
    leave(main())  # a one-shot command's process ends without freeing its data (``exits.skip_teardown``)
