"""The git adapter on real repositories: HTTPS token auth that never lands on disk, and the push guards."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.git_http import GitHTTPServer
from tests.forges.conftest import BOT, WEB_V1, Remote
from tests.support.gitrepos import git
from writeback.adapters.git.repo import GitAuth, GitRepo, PushStatus
from writeback.errors import GitError
from writeback.model import FilePatch

TOKEN = "ghs_not_a_real_token_0123456789"
PATCH = FilePatch(path="apps/web.yaml", before=WEB_V1, after=WEB_V1.replace("replicas: 2", "replicas: 3"))


@pytest.fixture
def https(remote: Remote) -> Iterator[GitHTTPServer]:
    server = GitHTTPServer(root=remote.bare.parent, username="x-access-token", password=TOKEN).start()
    try:
        yield server
    finally:
        server.stop()


def _all_text(root: Path) -> str:
    out = subprocess.run(["grep", "-r", "-a", "-l", TOKEN, str(root)], capture_output=True, text=True, check=False)
    return out.stdout


def test_https_token_goes_through_askpass_and_never_to_disk(
    https: GitHTTPServer, remote: Remote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a user's global git config that would store credentials: writeback must not let it
    creds = tmp_path / "git-credentials"
    (tmp_path / "gitconfig").write_text(f"[credential]\n\thelper = store --file {creds}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    url = f"{https.url}/{remote.bare.name}"
    repo = GitRepo(url=url, workdir=tmp_path / "clone", auth=GitAuth(token=TOKEN), bot=BOT)
    base = repo.sync(base="main")
    assert repo.commit(base_sha=base, branch="writeback/prod/a", patches=[PATCH], message="m") is not None
    assert repo.push(branch="writeback/prod/a", base="main", expected=None).status is PushStatus.PUSHED

    assert remote.show("writeback/prod/a", "apps/web.yaml") == PATCH.after
    assert any(h.startswith("Basic ") for h in https.auth_headers)
    assert TOKEN not in (tmp_path / "clone" / ".git" / "config").read_text()
    assert git("-C", str(tmp_path / "clone"), "remote", "get-url", "origin") == url
    assert _all_text(tmp_path / "clone") == ""
    assert not creds.exists()


def test_a_wrong_token_is_a_git_error_that_never_shows_the_token(
    https: GitHTTPServer, remote: Remote, tmp_path: Path
) -> None:
    wrong = "ghs_wrong_token_9876543210"
    repo = GitRepo(url=f"{https.url}/{remote.bare.name}", workdir=tmp_path / "c", auth=GitAuth(token=wrong), bot=BOT)
    with pytest.raises(GitError) as err:
        repo.sync(base="main")
    assert wrong not in str(err.value) and "cannot clone" in str(err.value)


def test_never_pushes_to_the_base_branch(remote: Remote, tmp_path: Path) -> None:
    repo = GitRepo(url=str(remote.bare), workdir=tmp_path / "c", bot=BOT)
    base = repo.sync(base="main")
    repo.commit(base_sha=base, branch="main", patches=[PATCH], message="m")
    before = remote.sha("main")
    for branch in ("main", "refs/heads/main"):
        with pytest.raises(GitError, match="base branch"):
            repo.push(branch=branch, base="main", expected=before)
    assert remote.sha("main") == before


def test_foreign_commits_block_the_push(remote: Remote, tmp_path: Path) -> None:
    repo = GitRepo(url=str(remote.bare), workdir=tmp_path / "c", bot=BOT)
    base = repo.sync(base="main")
    repo.commit(base_sha=base, branch="writeback/prod/a", patches=[PATCH], message="m")
    repo.push(branch="writeback/prod/a", base="main", expected=None)
    human = remote.person_commit("writeback/prod/a", "apps/web.yaml", "kind: Deployment\n")

    repo.sync(base="main")
    repo.commit(base_sha=base, branch="writeback/prod/a", patches=[PATCH], message="again")
    result = repo.push(branch="writeback/prod/a", base="main", expected=human)

    assert result.status is PushStatus.HUMAN_COMMITS
    assert result.foreign == (f"{human} alice@example.com",)
    assert remote.sha("writeback/prod/a") == human


def test_the_lease_refuses_a_branch_that_moved(remote: Remote, tmp_path: Path) -> None:
    repo = GitRepo(url=str(remote.bare), workdir=tmp_path / "c", bot=BOT)
    base = repo.sync(base="main")
    repo.commit(base_sha=base, branch="writeback/prod/a", patches=[PATCH], message="m")
    first = repo.push(branch="writeback/prod/a", base="main", expected=None).sha
    repo.commit(base_sha=base, branch="writeback/prod/a", patches=[PATCH], message="regenerated")
    # the branch exists now: the "must not exist" lease fails, and says it lost the race to the branch's holder
    lost = repo.push(branch="writeback/prod/a", base="main", expected=None)
    assert lost.status is PushStatus.LEASE_LOST and lost.sha == first
    stale = repo.push(branch="writeback/prod/a", base="main", expected=base)  # a stale expectation fails too
    assert stale.status is PushStatus.LEASE_LOST and stale.sha == first
    assert remote.sha("writeback/prod/a") == first
    second = repo.push(branch="writeback/prod/a", base="main", expected=first)
    assert second.status is PushStatus.PUSHED and remote.sha("writeback/prod/a") == second.sha != first


def test_base_moved_and_unsafe_paths(remote: Remote, tmp_path: Path) -> None:
    repo = GitRepo(url=str(remote.bare), workdir=tmp_path / "c", bot=BOT)
    base = repo.sync(base="main")
    stale = FilePatch(path="apps/web.yaml", before="something else\n", after="x\n")
    with pytest.raises(GitError, match=r"base moved: apps/web\.yaml"):
        repo.commit(base_sha=base, branch="writeback/prod/a", patches=[stale], message="m")
    for bad in ("../escape.yaml", "/etc/passwd", ".git/config"):
        with pytest.raises(GitError, match="outside the repository"):
            repo.commit(base_sha=base, branch="b", patches=[FilePatch(path=bad, before=None, after="x")], message="m")
    new = FilePatch(path="apps/new/cm.yaml", before=None, after="kind: ConfigMap\n")
    assert repo.commit(base_sha=base, branch="writeback/prod/n", patches=[new], message="m", signoff=True)
    message = git("-C", str(tmp_path / "c"), "log", "-1", "--format=%B")
    assert f"Signed-off-by: {BOT.name} <{BOT.email}>" in message


def test_missing_base_branch(remote: Remote, tmp_path: Path) -> None:
    repo = GitRepo(url=str(remote.bare), workdir=tmp_path / "c", bot=BOT)
    with pytest.raises(GitError, match="'release' does not exist"):
        repo.sync(base="release")
