"""The one small interface both forges implement, and the PR facts it returns."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from writeback.model import PullRequestSpec
from writeback.pr.markers import parse_marker

# The longest PR/MR body each forge accepts (here, so that rendering needs no forge library).
GITHUB_BODY_LIMIT = 65536
GITLAB_BODY_LIMIT = 1_000_000


class PRState(enum.StrEnum):
    OPEN = "open"
    CLOSED = "closed"  # closed without merging
    MERGED = "merged"


@dataclass(frozen=True, slots=True, kw_only=True)
class PRInfo:
    number: int
    url: str
    state: PRState
    title: str
    body: str
    head_branch: str
    head_sha: str
    draft: bool = False
    fingerprint: str | None = None  # from the body marker
    changeset_id: str | None = None
    merge_sha: str | None = None  # the commit that brought it into the base branch (merged PRs only)
    labels: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()  # requested reviewers (GitHub drops one from the list once they reviewed)
    assignees: tuple[str, ...] = ()


def pr_info(
    *,
    number: int,
    url: str,
    state: PRState,
    title: str,
    body: str | None,
    head_branch: str,
    head_sha: str,
    draft: bool,
    merge_sha: str | None = None,
    labels: Sequence[str] = (),
    reviewers: Sequence[str] = (),
    assignees: Sequence[str] = (),
) -> PRInfo:
    marker = parse_marker(body)
    return PRInfo(
        number=number,
        url=url,
        state=state,
        title=title,
        body=body or "",
        head_branch=head_branch,
        head_sha=head_sha,
        draft=draft,
        fingerprint=marker.fingerprint if marker else None,
        changeset_id=marker.changeset_id if marker else None,
        merge_sha=merge_sha if state is PRState.MERGED and merge_sha else None,
        labels=tuple(labels),
        reviewers=tuple(reviewers),
        assignees=tuple(assignees),
    )


# The longest pull/merge request body each forge accepts (here, so that rendering needs neither forge library).
GITHUB_BODY_LIMIT = 65536
GITLAB_BODY_LIMIT = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """The libraries' own retry, configured: attempts, and the longest wait we accept."""

    max_retries: int = 5
    max_wait_seconds: float = 60.0
    backoff_factor: float = 0.5  # 0 in tests: no built-in delays
    throttle: bool = True  # PyGithub's pause between requests; off in tests
    timeout_seconds: float = 15.0  # one request's connect and read timeout (a timed-out request is retried)


class Forge(Protocol):
    """GitHub pull requests and GitLab merge requests, as one small interface ("PR" below)."""

    kind: str  # "github" | "gitlab"
    body_limit: int  # longest PR body the platform accepts, in characters

    def find_prs(self, *, branch: str, state: PRState | None = None) -> list[PRInfo]:
        """PRs whose head is ``branch`` (any state when None), newest first."""

    def find_open_pr(self, *, branch: str) -> PRInfo | None: ...

    def get_pr(self, *, number: int) -> PRInfo:
        """One PR as it is now (its state, and once merged its ``merge_sha``); a ForgeError when there is none."""

    def list_open_prs(self, *, branch_prefix: str) -> list[PRInfo]: ...

    def create_pr(self, *, spec: PullRequestSpec) -> PRInfo:
        """Create with labels, reviewers, assignees and draft."""

    def update_pr(self, *, number: int, title: str, body: str) -> None: ...

    def close_pr(self, *, number: int) -> None: ...

    def comments(self, *, number: int) -> list[str]: ...

    def comment(self, *, number: int, text: str) -> None: ...

    def add_labels(self, *, number: int, labels: Sequence[str]) -> None: ...

    def request_reviewers(self, *, number: int, reviewers: Sequence[str]) -> None: ...

    def assign(self, *, number: int, assignees: Sequence[str]) -> None: ...

    def delete_branch(self, *, branch: str) -> None: ...

    def pr_commits(self, *, number: int) -> list[tuple[str, str]]:
        """(sha, git author e-mail) of the PR's commits, oldest first."""
