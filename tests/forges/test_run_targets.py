"""``run_targets``: one target's failure, whatever its kind, never stops the others."""

from __future__ import annotations

from writeback import config
from writeback.errors import ConfigError, GitError
from writeback.model import EnsureResult, Outcome, ResultReason
from writeback.pipeline.cycling import run_targets


def test_every_kind_of_failure_stays_with_its_target() -> None:
    targets = [config.Target(name=n, repo_url="/srv/repo.git") for n in ("bug", "git", "config", "ok")]
    failures: dict[str, Exception] = {
        "bug": KeyError("spec"), "git": GitError("cannot clone"), "config": ConfigError("forge.project: missing"),
    }  # fmt: skip

    def cycle(target: config.Target) -> list[EnsureResult]:
        if target.name in failures:
            raise failures[target.name]
        return [EnsureResult(outcome=Outcome.UNCHANGED, target=target.name)]

    results = {r.target: r for r in run_targets(targets, cycle=cycle)}

    assert [r.outcome for r in results.values()] == [Outcome.FAILED] * 3 + [Outcome.UNCHANGED]
    assert results["bug"].detail == "unexpected error: KeyError: 'spec'"
    assert results["config"].reason is ResultReason.BAD_INPUT and results["git"].reason is None
