"""``kubectl_complete-writeback``: completion of ``kubectl writeback <TAB>``, as kubectl asks its plugins for it.

kubectl (1.26 and later) completes a plugin's arguments by running the executable ``kubectl_complete-<plugin>``
found on PATH with the words typed after the plugin's name, the last one being the word to complete ("" for a new
word), and reads one candidate per line (``candidate<TAB>description``), then optionally ``:<directive>``, Cobra's
ShellCompDirective: 4 (no file completion) after commands, flags and choices; 0 (the shell's default, file names)
for a flag or argument that takes a path. pip installs this executable beside ``kubectl-writeback``.

Only the command being completed is built (``writeback.cli.build_parser(argv=...)``), as when it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from writeback.cli.exits import Tally

__all__ = ["complete", "main"]

NO_FILES = 4  # cobra.ShellCompDirectiveNoFileComp
DEFAULT = 0  # cobra.ShellCompDirectiveDefault: the shell completes file names
_PATH_METAVARS = {"FILE", "PATH", "DIR", "SUBDIR"}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The parser's subcommands and their one-line help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: str(helps.get(name, "")) for name in action.choices}
    return {}


def _child(parser: argparse.ArgumentParser, word: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and word in action.choices:
            return action.choices[word]  # type: ignore[no-any-return]
    return None


def _option(parser: argparse.ArgumentParser, word: str) -> argparse.Action | None:
    return parser._option_string_actions.get(word.split("=", 1)[0])


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0 and not isinstance(action, argparse._HelpAction | argparse._VersionAction)


def _values(action: argparse.Action) -> tuple[list[tuple[str, str]], int]:
    """The candidates for an option's value (its choices), or none and the default directive for a path."""
    if action.choices is not None:
        return [(str(c), action.help or "") for c in action.choices], NO_FILES
    return [], DEFAULT if action.metavar in _PATH_METAVARS else NO_FILES


def complete(words: Sequence[str]) -> tuple[list[tuple[str, str]], int]:
    """The candidates (word, description) for the last of ``words`` (the words after ``kubectl writeback``), and
    Cobra's directive."""
    from writeback.cli import build_parser

    *before, current = list(words) or [""]
    parser = build_parser(prog="kubectl writeback", argv=before)
    pending: argparse.Action | None = None
    for word in before:
        if pending is not None:
            pending = None
            continue
        if word.startswith("-"):
            action = _option(parser, word)
            if action is not None and _takes_value(action) and "=" not in word:
                pending = action
            continue
        parser = _child(parser, word) or parser
    if pending is not None:
        candidates, directive = _values(pending)
        return [(c, d) for c, d in candidates if c.startswith(current)], directive
    if current.startswith("-"):
        options = sorted({s for a in parser._actions for s in a.option_strings if s.startswith(current)
                          and a.help != argparse.SUPPRESS})  # fmt: skip
        helps = {s: a.help or "" for a in parser._actions for s in a.option_strings}
        return [(o, str(helps[o])) for o in options], NO_FILES
    commands = _subcommands(parser)
    if commands:
        return [(name, why) for name, why in commands.items() if name.startswith(current)], NO_FILES
    positional = next((a for a in parser._actions if not a.option_strings and a.choices is not None), None)
    if positional is not None:
        choices = [str(c) for c in positional.choices or ()]
        return [(c, positional.help or "") for c in choices if c.startswith(current)], NO_FILES
    return [], DEFAULT  # a file argument (config validate FILE...)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        candidates, directive = complete(words)
    except Exception:  # completion never prints a traceback into the shell: no candidates, files as a fallback
        candidates, directive = [], DEFAULT
    for word, why in candidates:
        sys.stdout.write(f"{word}\t{' '.join(why.split())[:80]}\n" if why else f"{word}\n")
    sys.stdout.write(f":{directive}\n")
    return Tally().exit_code()
