"""The one small interface every forge implements (``Forge``), what a kind of forge is (``ForgeKind``: its name,
git user name, body limit, settings model and opener), and the PR facts a forge returns."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pydantic import Field

from writeback.model import PullRequestSpec
from writeback.pr.markers import parse_marker
from writeback.settings import SecretRef, SettingsModel


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


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """The libraries' own retry, configured: attempts, and the longest wait we accept."""

    max_retries: int = 5
    max_wait_seconds: float = 60.0
    backoff_factor: float = 0.5  # 0 in tests: no built-in delays
    throttle: bool = True  # PyGithub's pause between requests; off in tests
    timeout_seconds: float = 15.0  # one request's connect and read timeout (a timed-out request is retried)


class ForgeSettings(SettingsModel):
    """The settings every forge takes (``targets[].forge``); a forge's own model adds its keys and fixes ``kind``."""

    kind: str = Field(description="which forge (the registered kinds: writeback.adapters.forges.registry)")
    url: str | None = Field(default=None, description="API base for GitHub Enterprise or self-hosted GitLab")
    project: str | None = Field(default=None, description="owner/name (GitHub) or group/project (GitLab)")
    token: SecretRef | None = None
    max_wait_seconds: float = Field(default=60.0, ge=0)
    max_retries: int = Field(default=5, ge=0, description="retries of a failed or rate-limited forge request")
    backoff_seconds: float = Field(default=0.5, ge=0, description="backoff factor between retries (0: none)")
    throttle: bool = Field(default=True, description="PyGithub's pause between requests (GitHub's guidance)")
    timeout_seconds: float = Field(default=15.0, gt=0, description="one forge request's connect and read timeout")


@dataclass(frozen=True, slots=True, kw_only=True)
class Opening:
    """What a forge kind's opener gets: the target's settings, resolved (``secret`` reads a SecretRef)."""

    settings: ForgeSettings
    project: str
    token: str | None
    policy: RetryPolicy
    key: str  # the settings' config key path, for errors
    flag_names: Mapping[str, str]  # what errors call a sub-key instead (a target built from flags: the flag)
    secret: Callable[[SecretRef, str], str]  # (reference, key for errors) -> the value


@runtime_checkable
class ForgeKind(Protocol):
    """One kind of forge: GitHub, GitLab. A forge module defines one, ``registry.FORGES`` lists them."""

    @property
    def name(self) -> str:
        """The ``forge.kind`` / ``--forge`` value: ``github``."""

    @property
    def title(self) -> str:
        """How messages and PR bodies name it: ``GitHub``."""

    @property
    def request_name(self) -> str:
        """What the forge calls a change request: ``pull request``, ``merge request``."""

    @property
    def git_username(self) -> str:
        """The user name git sends with the forge's token over HTTPS."""

    @property
    def body_limit(self) -> int:
        """The longest PR body the platform accepts, in characters."""

    @property
    def settings(self) -> type[ForgeSettings]:
        """Its settings model (``kind`` fixed to ``name``)."""

    def open(self, opening: Opening) -> Forge:
        """The forge for one target (its client library is imported only here)."""


class Forge(Protocol):
    """GitHub pull requests and GitLab merge requests, as one small interface ("PR" below)."""

    @property
    def kind(self) -> ForgeKind: ...

    def git_token(self) -> str | None:
        """The token git uses over HTTPS (user name: ``kind.git_username``), if the forge has one."""

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
