"""GitLab merge requests through python-gitlab: token auth, self-hosted URL, labels, reviewers, assignees, drafts.

python-gitlab's own retry (``retry_transient_errors``, ``max_retries``) is the only retry layer. It sleeps on
``Retry-After``/``RateLimit-Reset`` without a cap, so the HTTP session checks each retryable answer first and
raises ``RateLimited`` when the wait is past ``max_wait_seconds``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import gitlab
import requests
from gitlab.const import RETRYABLE_TRANSIENT_ERROR_CODES
from gitlab.v4.objects import Project, ProjectMergeRequest

from writeback.adapters.forges.base import ForgeKind, PRInfo, PRState, RetryPolicy, pr_info
from writeback.errors import ForgeError, RateLimited
from writeback.model import PullRequestSpec

DRAFT_PREFIX = "Draft: "
_DRAFT_PREFIXES = ("Draft:", "[Draft]", "(Draft)")
_STATES = {PRState.OPEN: "opened", PRState.CLOSED: "closed", PRState.MERGED: "merged"}


def _wait_from_headers(headers: Mapping[str, str]) -> float | None:
    with contextlib.suppress(ValueError):
        if "Retry-After" in headers:
            return float(headers["Retry-After"])
        if "RateLimit-Reset" in headers:
            return max(0.0, int(headers["RateLimit-Reset"]) - time.time())
    return None


class _CappedSession(requests.Session):
    """Refuses to let python-gitlab sleep longer than ``max_wait`` before a retry."""

    def __init__(self, *, max_wait: float) -> None:
        super().__init__()
        self.max_wait = max_wait

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        response = super().send(request, **kwargs)
        if response.status_code == 429 or response.status_code in RETRYABLE_TRANSIENT_ERROR_CODES:
            wait = _wait_from_headers(response.headers)
            if wait is not None and wait > self.max_wait:
                raise RateLimited(
                    f"GitLab asked to wait {wait:.0f}s (HTTP {response.status_code}), more than the maximum "
                    f"{self.max_wait:.0f}s; skipping until the next cycle"
                )
        return response


class _Gitlab(gitlab.Gitlab):
    """``gitlab.Gitlab`` with a configured ``max_retries`` on every request."""

    def __init__(self, *args: Any, max_retries: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._max_retries = max_retries

    def http_request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("max_retries", self._max_retries)
        return super().http_request(*args, **kwargs)


@contextlib.contextmanager
def _errors(what: str) -> Iterator[None]:
    try:
        yield
    except gitlab.GitlabParsingError as e:  # a 2xx whose body is no JSON: a proxy or an outage page
        raise ForgeError(f"GitLab sent an answer that is not JSON while trying to {what}") from e
    except gitlab.GitlabError as e:
        if e.response_code == 429:
            raise RateLimited(f"GitLab rate limit while trying to {what}; skipping until the next cycle") from e
        raise ForgeError(f"GitLab refused to {what}: HTTP {e.response_code}: {e.error_message}") from e
    except requests.exceptions.Timeout as e:
        raise ForgeError(f"GitLab timed out while trying to {what} (forge.timeout_seconds)") from e
    except requests.RequestException as e:
        raise ForgeError(f"GitLab request failed while trying to {what}: {type(e).__name__}: {e}") from e


def strip_draft(title: str) -> tuple[str, bool]:
    for prefix in _DRAFT_PREFIXES:
        if title.startswith(prefix):
            return title[len(prefix) :].lstrip(), True
    return title, False


def _info(mr: ProjectMergeRequest) -> PRInfo:
    state = {"opened": PRState.OPEN, "merged": PRState.MERGED}.get(mr.state, PRState.CLOSED)
    title, prefixed = strip_draft(mr.title)
    return pr_info(
        number=mr.iid,
        url=mr.web_url,
        state=state,
        title=title,
        body=mr.description,
        head_branch=mr.source_branch,
        head_sha=mr.sha or "",
        draft=bool(getattr(mr, "draft", False)) or prefixed,
        # a fast-forward merge makes no merge commit: the MR's head is then what reached the target branch
        merge_sha=getattr(mr, "merge_commit_sha", None) or getattr(mr, "squash_commit_sha", None) or mr.sha,
        labels=list(getattr(mr, "labels", None) or ()),
        reviewers=[u["username"] for u in getattr(mr, "reviewers", None) or () if isinstance(u, dict)],
        assignees=[u["username"] for u in getattr(mr, "assignees", None) or () if isinstance(u, dict)],
    )


class GitLabForge:
    """The ``Forge`` interface for one GitLab project (``group/project`` or a numeric id)."""

    def __init__(self, *, client: gitlab.Gitlab, project: str, kind: ForgeKind, token: str | None = None) -> None:
        self.kind = kind
        self._gl = client
        self._token = token
        self._project: Project = client.projects.get(project, lazy=True)
        self._drafts: dict[int, bool] = {}
        self._user_ids: dict[str, int] = {}

    def git_token(self) -> str | None:
        """The token git uses over HTTPS (user name ``oauth2``)."""
        return self._token

    def _remember(self, mr: ProjectMergeRequest) -> PRInfo:
        info = _info(mr)
        self._drafts[info.number] = info.draft
        return info

    def find_prs(self, *, branch: str, state: PRState | None = None) -> list[PRInfo]:
        query: dict[str, Any] = {"source_branch": branch, "order_by": "created_at", "sort": "desc"}
        if state is not None:
            query["state"] = _STATES[state]
        with _errors(f"list merge requests of {branch}"):
            found = self._project.mergerequests.list(get_all=True, **query)
            return [self._remember(mr) for mr in found if mr.source_branch == branch]

    def find_open_pr(self, *, branch: str) -> PRInfo | None:
        found = self.find_prs(branch=branch, state=PRState.OPEN)
        return found[0] if found else None

    def get_pr(self, *, number: int) -> PRInfo:
        with _errors(f"read merge request !{number}"):
            return self._remember(self._project.mergerequests.get(number))

    def list_open_prs(self, *, branch_prefix: str) -> list[PRInfo]:
        with _errors("list open merge requests"):
            found = self._project.mergerequests.list(get_all=True, state="opened")
            return [self._remember(mr) for mr in found if mr.source_branch.startswith(branch_prefix)]

    def user_ids(self, usernames: Sequence[str]) -> list[int]:
        """GitLab user ids by username (``GET /users?username=``); an unknown name is an error."""
        ids = []
        for name in usernames:
            if name not in self._user_ids:
                with _errors(f"look up the GitLab user {name!r}"):
                    users = self._gl.users.list(username=name, get_all=False)
                if not users:
                    raise ForgeError(f"GitLab has no user named {name!r} (reviewers/assignees)")
                self._user_ids[name] = int(users[0].id)
            ids.append(self._user_ids[name])
        return ids

    def create_pr(self, *, spec: PullRequestSpec) -> PRInfo:
        data: dict[str, Any] = {
            "source_branch": spec.branch,
            "target_branch": spec.base,
            "title": (DRAFT_PREFIX if spec.draft else "") + spec.title,
            "description": spec.body,
        }
        if spec.labels:
            data["labels"] = ",".join(spec.labels)
        if spec.reviewers:
            data["reviewer_ids"] = self.user_ids(spec.reviewers)
        if spec.assignees:
            data["assignee_ids"] = self.user_ids(spec.assignees)
        try:
            with _errors(f"open a merge request for {spec.branch}"):
                mr = self._project.mergerequests.create(data)
        except ForgeError as e:
            existing = (
                self.find_open_pr(branch=spec.branch) if getattr(e.__cause__, "response_code", 0) == 409 else None
            )
            if existing is None:
                raise
            return existing
        return self._remember(mr)

    def _update(self, number: int, data: dict[str, Any], what: str) -> None:
        with _errors(what):
            self._project.mergerequests.update(number, data)

    def update_pr(self, *, number: int, title: str, body: str) -> None:
        draft = self._drafts.get(number, False)
        self._update(
            number, {"title": (DRAFT_PREFIX if draft else "") + title, "description": body}, f"update !{number}"
        )

    def close_pr(self, *, number: int) -> None:
        self._update(number, {"state_event": "close"}, f"close !{number}")

    def comments(self, *, number: int) -> list[str]:
        with _errors(f"read the notes of !{number}"):
            notes = self._project.mergerequests.get(number, lazy=True).notes.list(get_all=True)
            return [n.body for n in notes if not getattr(n, "system", False)]

    def comment(self, *, number: int, text: str) -> None:
        with _errors(f"comment on !{number}"):
            self._project.mergerequests.get(number, lazy=True).notes.create({"body": text})

    def add_labels(self, *, number: int, labels: Sequence[str]) -> None:
        if labels:
            self._update(number, {"add_labels": ",".join(labels)}, f"label !{number}")

    def request_reviewers(self, *, number: int, reviewers: Sequence[str]) -> None:
        if reviewers:
            self._update(number, {"reviewer_ids": self.user_ids(reviewers)}, f"request reviewers on !{number}")

    def assign(self, *, number: int, assignees: Sequence[str]) -> None:
        if assignees:
            self._update(number, {"assignee_ids": self.user_ids(assignees)}, f"assign !{number}")

    def pr_commits(self, *, number: int) -> list[tuple[str, str]]:
        with _errors(f"list the commits of !{number}"):
            commits = self._project.mergerequests.get(number, lazy=True).commits(get_all=True)
            return [(c.id, c.author_email) for c in reversed(list(commits))]

    def delete_branch(self, *, branch: str) -> None:
        try:
            with _errors(f"delete branch {branch}"):
                self._project.branches.delete(branch)
        except ForgeError as e:
            if getattr(e.__cause__, "response_code", 0) != 404:
                raise


def gitlab_forge(
    *,
    project: str,
    url: str | None = None,
    token: str,
    policy: RetryPolicy | None = None,
    kind: ForgeKind,
) -> GitLabForge:
    """A GitLab forge for ``project`` on gitlab.com or a self-hosted ``url`` (without ``/api/v4``)."""
    policy = policy or RetryPolicy()
    base = (url or "https://gitlab.com").rstrip("/")
    base = base.removesuffix("/api/v4")
    client = _Gitlab(
        base,
        private_token=token,
        retry_transient_errors=True,
        max_retries=policy.max_retries,
        session=_CappedSession(max_wait=policy.max_wait_seconds),
        timeout=policy.timeout_seconds,
    )
    return GitLabForge(client=client, project=project, token=token, kind=kind)
