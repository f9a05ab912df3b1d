"""Exit codes: the one rule that turns what a command found into its exit code (as black's ``Report.return_code``),
and the one definition of what each code means, per command, that ``--help``, the docs' tables and the rule share.

Every command tallies its outcome into a :class:`Tally` and returns ``tally.exit_code(...)``; errors that stop a
command are mapped by the error boundary in ``writeback.cli`` (``WritebackError.exit_code``: an ``InputError`` is
2, any other error 3). What ``diff --exit-code`` counts as drift is ``Decision.actionable``
(:func:`drift_decisions`); the texts below name those decisions from the enum, so the help, ``docs/cli.md`` and the
code cannot disagree (``tests/cli/test_contract.py`` checks them against each other and against
:func:`markdown_table`).

This module imports ``writeback.decisions`` and ``writeback.model`` only when a rule or a text needs them:
``writeback --help`` stays light.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from writeback.errors import ExitCode

if TYPE_CHECKING:
    from writeback.model import Decision, EnsureResult, PlanProblem

__all__ = [
    "ExitCode",
    "Tally",
    "actionable_words",
    "drift_decisions",
    "leave",
    "markdown_table",
    "meanings",
    "skip_teardown",
]

_skip_teardown = [False]


def skip_teardown() -> None:
    """A one-shot command (``diff``, ``plan``, ``run --once``) asks the console script to end the process without
    tearing it down: freeing a 10,000-object run's data object by object, only to exit, costs about 0.4 s of CPU."""
    _skip_teardown[0] = True


def leave(code: int) -> None:
    """End the process with ``code``: when a one-shot command asked for it (:func:`skip_teardown`), after the exit
    handlers (``atexit``) and flushing the output, without the interpreter's teardown (``os._exit``); else as
    ``sys.exit`` does. For the console script only: a caller
    of ``writeback.cli.main`` in its own process keeps it."""
    import atexit
    import contextlib
    import os
    import sys

    if not _skip_teardown[0]:
        sys.exit(code)
    atexit._run_exitfuncs()  # what an exit runs first (logging.shutdown, temporary folders' finalizers) runs
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said
            stream.flush()
    os._exit(code)


def drift_decisions() -> frozenset[Decision]:
    """The decisions ``diff --exit-code`` exits 1 on: ``Decision.actionable`` (everything a person must look at;
    not ``ignore``, not drift a person made, nor ``pending``: the next sync settles it)."""
    from writeback.decisions import Decision

    return frozenset(d for d in Decision if d.actionable)


def actionable_words() -> str:
    """The decisions ``diff --exit-code`` exits 1 on (``Decision.actionable``), for help texts: a person's changes
    first, then whole objects: ``writeback, flag, unattributed, new or deleted``."""
    from writeback.decisions import Decision

    names = [d.value for d in Decision if d.by_person] + [d.value for d in Decision if d.whole_object]
    return ", ".join(names[:-1]) + " or " + names[-1]


_INPUT = (
    "a usage, config or input error: a flag, a file, a key, a resource, a missing tool, token or repository; "
    "the message names it"
)
_INTERRUPTED = "interrupted (Ctrl-C)"


def meanings(command: str = "") -> tuple[tuple[ExitCode, str], ...]:
    """What each exit code of ``command`` (``diff``, ``plan``, ``run``, ``config``, ``completion``,
    ``break-glass``; "" for all of them) means, in order."""
    drift: dict[str, Callable[[], str]] = {
        "diff": lambda: f"with --exit-code: drift found, a field or resource decided {actionable_words()}",
        "plan": lambda: (
            "with --exit-code: a change set would change files, or leaves a write-back unresolved (a "
            "field whose source writeback cannot find, a resource created or deleted live)"
        ),
        "run": lambda: "with --exit-code (and --once): a pull request was opened or updated",
        "": lambda: (
            "with --exit-code only: drift found (diff), files would change or a write-back is unresolved "
            "(plan), a pull request opened or updated (run)"
        ),
    }
    failed = {
        "diff": "the cluster or git failed at run time",
        "plan": "a change set was aborted (its patched source did not verify), or the cluster or git failed",
        "run": "at least one target failed at run time (the cluster, git or the forge) while the others ran",
        "break-glass": "the cluster refused or failed, or a backport failed (auto-sync then stays suspended)",
        "": "a run-time failure: the cluster, git or the forge failed, a change set was aborted, or a target "
        "failed while the others ran",
    }
    ok = {"config": "every file is valid (validate), or the schema was printed", "completion": "printed"}
    codes: list[tuple[ExitCode, str]] = [(ExitCode.OK, ok.get(command, "success"))]
    if command in drift:
        codes.append((ExitCode.DRIFT, drift[command]()))  # only the command asked for reads Decision
    codes.append((ExitCode.INPUT, _INPUT))
    if command in failed:
        codes.append((ExitCode.FAILED, failed[command]))
    codes.append((ExitCode.INTERRUPTED, _INTERRUPTED))
    return tuple(codes)


def markdown_table() -> str:
    """The exit codes of every command as the Markdown table of ``docs/cli.md`` (and the README)."""
    rows = ["| code | meaning |", "| --- | --- |"]
    rows += [f"| {int(code)} | {text} |" for code, text in meanings()]
    per = ["", "| command | 1 means | 3 means |", "| --- | --- | --- |"]
    for command in ("diff", "plan", "run", "break-glass"):
        texts = dict(meanings(command))
        one, three = (texts.get(code, "(not used)") for code in (ExitCode.DRIFT, ExitCode.FAILED))
        per.append(f"| `{command}` | {one} | {three} |")
    return "\n".join(rows + per) + "\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tally:
    """What a command found, as far as its exit code cares."""

    bad_input: bool = False  # unusable files, resources or flags (exit 2)
    failed: bool = False  # a target or change set failed at run time (exit 3, over 2)
    changes: bool = False  # drift (diff), file changes or unresolved write-backs (plan), a PR opened or updated (run)

    def exit_code(self, *, exit_on_changes: bool = False) -> ExitCode:
        if self.failed:
            return ExitCode.FAILED
        if self.bad_input:
            return ExitCode.INPUT
        if exit_on_changes and self.changes:
            return ExitCode.DRIFT
        return ExitCode.OK

    @classmethod
    def of_decisions(cls, decisions: Iterable[Decision], *, bad_input: bool = False) -> Tally:
        """``diff``: drift is any actionable decision (``Decision.actionable``)."""
        drift = drift_decisions()
        return cls(bad_input=bad_input, changes=any(d in drift for d in decisions))

    @classmethod
    def of_problems(cls, problems: Iterable[PlanProblem], *, bad_input: bool = False, changes: bool = False) -> Tally:
        """A plan: aborted change sets are run-time failures, unusable sources bad input."""
        from writeback.model import ProblemKind

        kinds = {p.kind for p in problems}
        return cls(
            failed=ProblemKind.ABORTED in kinds,
            bad_input=bad_input or ProblemKind.UNUSABLE_SOURCE in kinds,
            changes=changes,
        )

    @classmethod
    def of_results(cls, results: Iterable[EnsureResult]) -> Tally:
        """``run``: a FAILED result is bad input when its reason says so, else a run-time failure."""
        from writeback.model import Outcome, ResultReason

        failed = bad = changes = False
        for r in results:
            if r.outcome is Outcome.FAILED:
                if r.reason is ResultReason.BAD_INPUT:
                    bad = True
                else:
                    failed = True
            elif r.outcome in (Outcome.CREATED, Outcome.UPDATED):
                changes = True
        return cls(failed=failed, bad_input=bad, changes=changes)
