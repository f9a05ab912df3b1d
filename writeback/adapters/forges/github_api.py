"""GitHub pull requests through PyGithub: token or GitHub App installation auth, GitHub Enterprise base URL.

PyGithub's own ``GithubRetry`` is the only retry layer. Its waits are capped at ``max_wait_seconds``:
past that (``Retry-After`` or ``X-RateLimit-Reset`` too far away) it raises, and we raise ``RateLimited``.
"""

from __future__ import annotations

import contextlib
import logging
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

import jwt
import requests
from github import Auth, Github, GithubException, GithubIntegration, GithubRetry
from github.GithubException import RateLimitExceededExceedsMaxWait, RateLimitExceededException
from github.PullRequest import PullRequest
from github.Repository import Repository
from urllib3.connectionpool import ConnectionPool
from urllib3.response import BaseHTTPResponse

from writeback.adapters.forges.base import ForgeKind, PRInfo, PRState, RetryPolicy, pr_info
from writeback.errors import ConfigError, ForgeError, RateLimited
from writeback.model import PullRequestSpec

log = logging.getLogger(__name__)

_ALREADY_EXISTS = "A pull request already exists for"


def _wait_from_headers(status: int, headers: Any) -> float | None:
    """Seconds the server asks us to wait, from Retry-After or an exhausted X-RateLimit-Reset."""
    retry_after = headers.get("Retry-After")
    if retry_after is not None:
        with contextlib.suppress(ValueError):
            return float(retry_after)
    reset = headers.get("X-RateLimit-Reset")
    if status in (403, 429) and headers.get("X-RateLimit-Remaining") == "0" and reset and reset.isdigit():
        return max(0.0, int(reset) - time.time())
    return None


class CappedGithubRetry(GithubRetry):
    """``GithubRetry`` that raises instead of sleeping longer than ``max_rate_limit_wait``.

    PyGithub caps only its own rate-limit backoff; a ``Retry-After`` header is slept on by urllib3
    without a cap, so it is checked here too.
    """

    def increment(  # type: ignore[override]
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: Any = None,
    ) -> GithubRetry:
        limit = self.max_rate_limit_wait
        if response is not None and limit is not None and (response.status in (403, 429) or response.status >= 500):
            wait = _wait_from_headers(response.status, response.headers)
            if wait is not None and wait > limit:
                raise RateLimitExceededExceedsMaxWait(
                    response.status, {"message": f"asked to wait {wait:.0f}s"}, dict(response.headers), wait=wait
                )
        return super().increment(method, url, response, error, _pool, _stacktrace)  # type: ignore[arg-type,return-value]


def make_retry(policy: RetryPolicy) -> CappedGithubRetry:
    return CappedGithubRetry(
        total=policy.max_retries,
        backoff_factor=policy.backoff_factor,
        max_rate_limit_wait=policy.max_wait_seconds,
        secondary_rate_wait=min(60.0, policy.max_wait_seconds),
        status_forcelist=[429, *range(500, 600)],
    )


@contextlib.contextmanager
def _errors(what: str) -> Iterator[None]:
    try:
        yield
    except (RateLimitExceededExceedsMaxWait, RateLimitExceededException) as e:
        wait = getattr(e, "wait", None)
        more = f" (asked to wait {wait:.0f}s)" if isinstance(wait, int | float) else ""
        raise RateLimited(f"GitHub rate limit while trying to {what}{more}; skipping until the next cycle") from e
    except GithubException as e:
        message = e.data.get("message") if isinstance(e.data, dict) else e.data
        raise ForgeError(f"GitHub refused to {what}: HTTP {e.status}: {message}") from e
    except requests.exceptions.RetryError as e:  # the retries ran out: say on what, without the whole URL
        cause = e.args[0] if e.args else None
        reason = getattr(cause, "reason", None) or cause or e
        raise ForgeError(f"GitHub failed while trying to {what}: {reason}, after the configured retries") from e
    except requests.exceptions.Timeout as e:
        raise ForgeError(f"GitHub timed out while trying to {what} (forge.timeout_seconds), after retries") from e
    except requests.RequestException as e:
        raise ForgeError(f"GitHub request failed while trying to {what}: {type(e).__name__}: {e}") from e
    except (TypeError, AttributeError, KeyError, ValueError) as e:  # PyGithub read an answer that is no API object
        raise ForgeError(
            f"GitHub sent an answer that is not JSON of the documented shape while trying to {what} "
            f"({type(e).__name__}); a proxy or an outage page in front of the API?"
        ) from e


def _info(pr: PullRequest) -> PRInfo:
    state = PRState.MERGED if pr.merged_at is not None else PRState.CLOSED
    if pr.state == "open":
        state = PRState.OPEN
    return pr_info(
        number=pr.number,
        url=pr.html_url,
        state=state,
        title=pr.title,
        body=pr.body,
        head_branch=pr.head.ref,
        head_sha=pr.head.sha,
        draft=bool(pr.draft),
        merge_sha=pr.merge_commit_sha,
        labels=[label.name for label in pr.labels],
        reviewers=[u.login for u in pr.requested_reviewers],
        assignees=[u.login for u in pr.assignees],
    )


class GitHubForge:
    """The ``Forge`` interface for one GitHub repository (``owner/name``)."""

    def __init__(self, *, client: Github, project: str, auth: Auth.Auth, kind: ForgeKind) -> None:
        self.kind = kind
        self._gh = client
        self._auth = auth
        self._owner = project.split("/", 1)[0]
        self._repo: Repository = client.withLazy(True).get_repo(project)
        self._pulls: dict[int, PullRequest] = {}

    def git_token(self) -> str:
        """The token git uses over HTTPS (an installation token for a GitHub App)."""
        with _errors("get an access token"):
            return str(self._auth.token)

    def _pull(self, number: int) -> PullRequest:
        if number not in self._pulls:
            with _errors(f"read pull request #{number}"):
                self._pulls[number] = self._repo.get_pull(number)
        return self._pulls[number]

    def _remember(self, pr: PullRequest) -> PRInfo:
        self._pulls[pr.number] = pr
        return _info(pr)

    def find_prs(self, *, branch: str, state: PRState | None = None) -> list[PRInfo]:
        api_state = "open" if state is PRState.OPEN else ("all" if state is None else "closed")
        with _errors(f"list pull requests of {branch}"):
            pulls = self._repo.get_pulls(
                state=api_state, head=f"{self._owner}:{branch}", sort="created", direction="desc"
            )
            found = [self._remember(p) for p in pulls if p.head.ref == branch]
        return [p for p in found if state is None or p.state is state]

    def find_open_pr(self, *, branch: str) -> PRInfo | None:
        found = self.find_prs(branch=branch, state=PRState.OPEN)
        return found[0] if found else None

    def get_pr(self, *, number: int) -> PRInfo:
        with _errors(f"read pull request #{number}"):
            return self._remember(self._repo.get_pull(number))

    def list_open_prs(self, *, branch_prefix: str) -> list[PRInfo]:
        with _errors("list open pull requests"):
            return [
                self._remember(p) for p in self._repo.get_pulls(state="open") if p.head.ref.startswith(branch_prefix)
            ]

    def create_pr(self, *, spec: PullRequestSpec) -> PRInfo:
        try:
            with _errors(f"open a pull request for {spec.branch}"):
                pr = self._repo.create_pull(
                    base=spec.base, head=spec.branch, title=spec.title, body=spec.body, draft=spec.draft
                )
        except ForgeError as e:
            if _ALREADY_EXISTS not in str(getattr(e.__cause__, "data", "")):
                raise
            existing = self.find_open_pr(branch=spec.branch)
            if existing is None:
                raise
            return existing
        info = self._remember(pr)
        self.add_labels(number=info.number, labels=spec.labels)
        self.request_reviewers(number=info.number, reviewers=spec.reviewers)
        self.assign(number=info.number, assignees=spec.assignees)
        return info

    def update_pr(self, *, number: int, title: str, body: str) -> None:
        with _errors(f"update pull request #{number}"):
            self._pull(number).edit(title=title, body=body)

    def close_pr(self, *, number: int) -> None:
        with _errors(f"close pull request #{number}"):
            self._pull(number).edit(state="closed")

    def comments(self, *, number: int) -> list[str]:
        with _errors(f"read the comments of #{number}"):
            return [c.body for c in self._pull(number).get_issue_comments()]

    def comment(self, *, number: int, text: str) -> None:
        with _errors(f"comment on pull request #{number}"):
            self._pull(number).create_issue_comment(text)

    def add_labels(self, *, number: int, labels: Sequence[str]) -> None:
        if labels:
            with _errors(f"label pull request #{number}"):
                self._pull(number).add_to_labels(*labels)

    def request_reviewers(self, *, number: int, reviewers: Sequence[str]) -> None:
        if reviewers:
            with _errors(f"request reviewers on #{number}"):
                self._pull(number).create_review_request(reviewers=list(reviewers))

    def assign(self, *, number: int, assignees: Sequence[str]) -> None:
        if assignees:
            with _errors(f"assign pull request #{number}"):
                self._pull(number).add_to_assignees(*assignees)

    def pr_commits(self, *, number: int) -> list[tuple[str, str]]:
        with _errors(f"list the commits of #{number}"):
            return [(c.sha, c.commit.author.email) for c in self._pull(number).get_commits()]

    def delete_branch(self, *, branch: str) -> None:
        try:
            with _errors(f"delete branch {branch}"):
                # DELETE /repos/{owner}/{repo}/git/refs/heads/{branch}; a lazy repository's get_git_ref(...).delete()
                # would call the singular .../git/ref/... path, which the API does not describe for DELETE.
                ref = urllib.parse.quote(f"heads/{branch}", safe="/")
                self._repo.requester.requestJsonAndCheck("DELETE", f"{self._repo.url}/git/refs/{ref}")
        except ForgeError as e:
            if getattr(e.__cause__, "status", None) in (404, 422):
                return  # already gone
            raise


def github_forge(
    *,
    project: str,
    base_url: str | None = None,
    token: str | None = None,
    app_id: int | None = None,
    private_key: str | None = None,
    installation_id: int | None = None,
    policy: RetryPolicy | None = None,
    key: str = "forge.private_key",
    kind: ForgeKind,
) -> GitHubForge:
    """A GitHub forge with a token, or as a GitHub App installation (the installation is looked up if omitted).

    ``key`` names the private key's config key in errors.
    """
    policy = policy or RetryPolicy()
    url = (base_url or "https://api.github.com").rstrip("/")
    retry = make_retry(policy)
    pause = {} if policy.throttle else {"seconds_between_requests": None, "seconds_between_writes": None}
    auth: Auth.Auth
    if token:
        auth = Auth.Token(token)
    elif app_id is not None and private_key:
        app = Auth.AppAuth(app_id, private_key)
        try:
            app.create_jwt()  # a key that cannot sign fails here, once, instead of on every later request
        except (jwt.PyJWTError, ValueError, TypeError) as e:
            raise ConfigError(
                f"{key}: cannot sign a GitHub App JWT with it ({type(e).__name__}): give the App's PEM private key"
            ) from e
        if installation_id is None:
            owner, _, name = project.partition("/")
            with _errors(f"find the GitHub App installation of {project}"):
                integration = GithubIntegration(auth=app, base_url=url, retry=retry, **pause)  # type: ignore[arg-type]
                installation_id = integration.get_repo_installation(owner, name).id
        auth = app.get_installation_auth(installation_id)
    else:
        raise ForgeError("GitHub needs a token, or app_id with private_key (GitHub App)")
    timeout = max(1, round(policy.timeout_seconds))  # PyGithub takes whole seconds
    client = Github(auth=auth, base_url=url, retry=retry, timeout=timeout, **pause)  # type: ignore[arg-type]
    return GitHubForge(client=client, project=project, auth=auth, kind=kind)
