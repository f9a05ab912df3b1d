"""What a target's pull requests are opened with: branch, base, labels, reviewers, assignees, draft, and how a
rendered text becomes the forge's ``PullRequestSpec``. Shared by ``plan``'s preview and ``run``'s publishing, so that
a preview imports nothing of git or the forges (issue 23)."""

from __future__ import annotations

from dataclasses import dataclass

from writeback import config
from writeback.model import ChangeSet, PullRequestSpec, Review
from writeback.pr.text import Rendered

__all__ = ["PublishSettings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishSettings:
    target: str
    base: str
    branch_template: str = "writeback/{target}/{changeset}"
    labels: tuple[str, ...] = ()
    security_labels: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()
    draft: bool = False
    reopen_closed: bool = False
    signoff: bool = False
    dry_run: bool = False

    @classmethod
    def from_target(cls, target: config.Target, *, dry_run: bool = False) -> PublishSettings:
        return cls.from_pull_request(
            target.pull_request, target=target.name, base=target.base, signoff=target.git.signoff, dry_run=dry_run
        )

    @classmethod
    def from_pull_request(
        cls, pr: config.PullRequest, *, target: str, base: str = "main", signoff: bool = False, dry_run: bool = False
    ) -> PublishSettings:
        """The settings of ``pr`` (a target's ``pull_request``, or its defaults for a target without config)."""
        return cls(
            target=target,
            base=base,
            branch_template=pr.branch_template,
            labels=pr.labels,
            security_labels=pr.security_labels,
            reviewers=pr.reviewers,
            assignees=pr.assignees,
            draft=pr.draft,
            reopen_closed=pr.reopen_closed,
            signoff=signoff,
            dry_run=dry_run,
        )

    def pull_request(self, cs: ChangeSet, rendered: Rendered) -> PullRequestSpec:
        """What the forge gets for ``cs``: the branch, base, texts, labels, reviewers, assignees and draft."""
        labels = self.labels + (self.security_labels if cs.review is Review.SECURITY else ())
        return PullRequestSpec(
            branch=self.branch(cs.id),
            base=self.base,
            title=rendered.title,
            body=rendered.body,
            fingerprint=cs.fingerprint,
            changeset_id=cs.id,
            labels=tuple(dict.fromkeys(labels)),
            reviewers=self.reviewers,
            assignees=self.assignees,
            draft=self.draft,
        )

    def branch(self, changeset_id: str) -> str:
        return self.branch_template.format(target=self.target, changeset=changeset_id)

    def branch_prefix(self) -> str:
        return self.branch_template.split("{changeset}", 1)[0].format(target=self.target)
