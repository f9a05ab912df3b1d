"""Exit codes: the one rule that turns what a command found into its exit code (as black's ``Report.return_code``),
and the one definition of what each code means, per command, that ``--help``, the docs' tables and the rule share.

Every command tallies its outcome into a :class:`Tally` and returns ``tally.exit_code(...)``; errors that stop a
command are mapped by the error boundary in ``writeback.cli`` (``WritebackError.exit_code``: an ``InputError`` is
2, any other error 3). What ``--exit-code`` counts as drift is :data:`DRIFT_DECISIONS`, a set of
``model.Decision`` members; the texts below name them from the enum, so the help, ``docs/cli.md`` and the code
cannot disagree (``tests/cli/test_exit_codes.py`` checks the docs against :func:`markdown_table`).

This module imports ``writeback.model`` only when a rule or a text needs it: ``writeback --help`` stays light.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from writeback.errors import ExitCode

if TYPE_CHECKING:
    from writeback.model import Decision, EnsureResult, PlanProblem

__all__ = ["DRIFT_DECISIONS", "ExitCode", "Tally", "drift_decisions", "is_drift", "markdown_table", "meanings"]

# The decisions ``diff --exit-code`` counts as drift, by name: everything a person must look at. ``ignore`` (not
# drift a person made) and ``pending`` (Git is ahead: the next sync settles it) are not drift.
DRIFT_DECISIONS: tuple[str, ...] = ("writeback", "flag", "unattributed", "new", "deleted")


def drift_decisions() -> frozenset[Decision]:
    """:data:`DRIFT_DECISIONS` as ``Decision`` members (a name that is no member fails here, and in the tests)."""
    from writeback.model import Decision

    return frozenset(Decision(name) for name in DRIFT_DECISIONS)


def is_drift(decision: Decision) -> bool:
    return decision in drift_decisions()


def _listed(names: Iterable[str]) -> str:
    items = list(names)
    return ", ".join(items[:-1]) + f" or {items[-1]}" if len(items) > 1 else "".join(items)


_INPUT = (
    "a usage, config or input error: a flag, a file, a key, a resource, a missing tool, token or repository; "
    "the message names it"
)
_INTERRUPTED = "interrupted (Ctrl-C)"


def meanings(command: str = "") -> tuple[tuple[ExitCode, str], ...]:
    """What each exit code of ``command`` (``diff``, ``plan``, ``run``, ``config``, ``completion``,
    ``break-glass``; "" for all of them) means, in order."""
    drift = {
        "diff": f"with --exit-code: drift found, a field or resource decided {_listed(DRIFT_DECISIONS)}",
        "plan": "with --exit-code: a change set would change files, or leaves a write-back unresolved (a field "
        "whose source writeback cannot find, a resource created or deleted live)",
        "run": "with --exit-code (and --once): a pull request was opened or updated",
        "": "with --exit-code only: drift found (diff), files would change or a write-back is unresolved (plan), "
        "a pull request opened or updated (run)",
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
        codes.append((ExitCode.DRIFT, drift[command]))
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
        """``diff``: drift is any decision of :data:`DRIFT_DECISIONS`."""
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
