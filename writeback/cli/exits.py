"""The one rule that turns what a command found into its exit code (as black's ``Report.return_code``).

Every command tallies its outcome into a :class:`Tally` and returns ``tally.exit_code(...)``; errors that stop a
command are mapped by the error boundary in ``writeback.cli`` (``WritebackError.exit_code``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from writeback.errors import ExitCode
from writeback.model import Decision, EnsureResult, Outcome, PlanProblem, ProblemKind, ResultReason

__all__ = ["ExitCode", "Tally", "actionable_words"]


def actionable_words() -> str:
    """The decisions ``diff --exit-code`` exits 1 on (``Decision.actionable``), for help texts: a person's changes
    first, then whole objects: ``writeback, flag, unattributed, new or deleted``."""
    names = [d.value for d in Decision if d.by_person] + [d.value for d in Decision if d.whole_object]
    return ", ".join(names[:-1]) + " or " + names[-1]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tally:
    """What a command found, as far as its exit code cares."""

    bad_input: bool = False  # unusable files, resources or flags (exit 2)
    failed: bool = False  # a target or change set failed at run time (exit 3, over 2)
    changes: bool = False  # drift (diff), file changes (plan), a PR opened or updated (run)

    def exit_code(self, *, exit_on_changes: bool = False) -> ExitCode:
        if self.failed:
            return ExitCode.FAILED
        if self.bad_input:
            return ExitCode.INPUT
        if exit_on_changes and self.changes:
            return ExitCode.DRIFT
        return ExitCode.OK

    @classmethod
    def of_problems(cls, problems: Iterable[PlanProblem], *, bad_input: bool = False, changes: bool = False) -> Tally:
        """A plan: aborted change sets are run-time failures, unusable sources bad input."""
        kinds = {p.kind for p in problems}
        return cls(
            failed=ProblemKind.ABORTED in kinds,
            bad_input=bad_input or ProblemKind.UNUSABLE_SOURCE in kinds,
            changes=changes,
        )

    @classmethod
    def of_results(cls, results: Iterable[EnsureResult]) -> Tally:
        """``run``: a FAILED result is bad input when its reason says so, else a run-time failure."""
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
