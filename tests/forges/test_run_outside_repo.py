"""Issue 22 §6 through ``writeback run --once`` against the fake GitHub: a repository that reaches outside itself
never makes writeback read or write there (the found bug: ``apps/web.yaml`` linked to a file of the bot's host,
and the run rewrote that file while the PR showed nothing). The cases are those of
``tests/planning/test_outside_repo.py``, in the bot's own clone; the host's folder is hashed before and after."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fakes.github_fake import GitHubFake
from tests.forges.test_run_cli import MANIFEST, flags, live_dump
from tests.planning.test_outside_repo import OUTSIDE, REFUSED, WHY
from tests.support.cli import run_cli
from tests.support.gitrepos import git
from tests.support.outside import HOST_TAG, Watched, host_dir, repo_links
from writeback.adapters import kustomize as kustomize_cli


def _bare(tmp_path: Path, files: dict[str, str], links: dict[str, str]) -> Path:
    """A bare remote whose main holds ``files`` and ``links`` (symbolic links, committed as Git stores them)."""
    bare, seed = tmp_path / "remote.git", tmp_path / "seed"
    git("init", "-q", "--bare", "--initial-branch=main", str(bare))
    git("clone", "-q", str(bare), str(seed))
    repo_links(seed, files={"README.md": "the app\n", **files}, links=links)
    git("add", "-A", cwd=seed)
    git("-c", "user.email=a@example.com", "-c", "user.name=A", "commit", "-q", "-m", "init", cwd=seed)
    git("push", "-q", "origin", "HEAD:refs/heads/main", cwd=seed)
    return bare


def _run(tmp_path: Path, bare: Path, fake: GitHubFake) -> tuple[int, str, str]:
    live = live_dump(tmp_path, "registry.example.com/web:1.0.4")
    return run_cli(*flags("github", bare, fake, live), "--workdir", str(tmp_path / "wd"))


@pytest.fixture(autouse=True)
def _env(kustomize_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kustomize_cli.ENV_VAR, str(kustomize_bin))
    monkeypatch.setenv("WB_TEST_TOKEN", "ghp_test_token")


@pytest.mark.parametrize("case", OUTSIDE)
def test_run_never_reads_or_writes_outside_the_clone(case: str, tmp_path: Path) -> None:
    host = host_dir(tmp_path)
    watched = Watched(host)
    before = watched.digest()
    files, links = OUTSIDE[case](host)
    # the clone is wd/apps (the target's name): one more folder to climb than from the planning tests' repo
    files = {k: v.replace("../../host", "../../../host") for k, v in files.items()}
    bare = _bare(tmp_path, files, links)
    fake = GitHubFake(bare=bare).start()
    try:
        code, out, err = _run(tmp_path, bare, fake)
    finally:
        fake.stop()
    assert watched.digest() == before, "a file of the bot's host changed"
    assert code == 2, out + err  # the target fails on the named problem
    why = WHY[case].replace("../host/base", "../../host/base")
    assert why in out + err, out + err
    bodies = "".join((pr["body"] or "") + pr["title"] for pr in fake.prs.values())
    assert HOST_TAG not in out + err + bodies  # nothing of the host was read
    for ref in git("--git-dir", str(bare), "for-each-ref", "--format=%(refname)").splitlines():
        grep = ["git", "--git-dir", str(bare), "grep", "-h", "-e", HOST_TAG, ref]
        assert subprocess.run(grep, capture_output=True, text=True).stdout == ""  # no branch holds the host's
    assert fake.violations == []


def test_run_edits_the_real_path_of_a_link_inside_the_repository(tmp_path: Path) -> None:
    bare = _bare(tmp_path, {"shared/web.yaml": MANIFEST}, {"apps/web.yaml": "../shared/web.yaml"})
    fake = GitHubFake(bare=bare).start()
    try:
        code, out, err = _run(tmp_path, bare, fake)
        assert code == 0, out + err
        assert " created " in out
        [pr] = fake.prs.values()
        branch = pr["head"]
        changed = git("--git-dir", str(bare), "diff", "--name-only", "main", branch)
        assert changed == "shared/web.yaml"  # the PR shows the real path
        show = ["git", "--git-dir", str(bare), "show", f"{branch}:shared/web.yaml"]
        assert "web:1.0.4   # bumped by CI" in subprocess.run(show, capture_output=True, text=True, check=True).stdout
        # the link is still a link to the same file
        assert git("--git-dir", str(bare), "ls-tree", branch, "apps/web.yaml").startswith("120000 ")
        assert fake.violations == []
    finally:
        fake.stop()


def test_the_clone_refuses_to_commit_through_a_link(tmp_path: Path) -> None:
    """Defence in depth, below the planner: the git adapter writes no patch whose path is a link or leaves the
    clone, whatever it is given."""
    from tests.forges.conftest import BOT
    from writeback.adapters.git.repo import GitRepo
    from writeback.errors import GitError
    from writeback.model import FilePatch

    host = host_dir(tmp_path)
    before = Watched(host).digest()
    bare = _bare(tmp_path, {"shared/web.yaml": MANIFEST}, {"apps/web.yaml": "../shared/web.yaml",
                                                           "apps/host.yaml": str(host / "web.yaml"),
                                                           "apps/hostdir": str(host / "dir")})  # fmt: skip
    repo = GitRepo(url=str(bare), workdir=tmp_path / "clone", bot=BOT)
    base = repo.sync(base="main")
    host_text = (host / "web.yaml").read_text()
    for path, before_text, why in [
        ("apps/web.yaml", MANIFEST, "it is a symbolic link"),
        ("apps/host.yaml", host_text, f"apps/host.yaml {REFUSED}"),
        ("apps/hostdir/web.yaml", host_text, f"apps/hostdir {REFUSED}"),
        ("apps/hostdir/new.yaml", None, f"apps/hostdir {REFUSED}"),
    ]:
        patch = FilePatch(path=path, before=before_text, after="kind: Changed\n")
        with pytest.raises(GitError, match=why):
            repo.commit(base_sha=base, branch="writeback/x", patches=[patch], message="x")
    with pytest.raises(GitError, match=REFUSED):
        repo.read("apps/host.yaml")
    assert Watched(host).digest() == before
