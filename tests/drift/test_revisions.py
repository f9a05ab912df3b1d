"""Reading the repo at a revision with real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from writeback.adapters import revisions
from writeback.errors import InputError


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "--initial-branch=main")
    git(r, "config", "user.name", "T")
    git(r, "config", "user.email", "t@example.com")
    git(r, "config", "commit.gpgsign", "false")
    return r


def commit(repo: Path, files: dict[str, str], msg: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)
    return git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("main@sha1:" + "a" * 40, "a" * 40),
        ("sha1:" + "b" * 40, "b" * 40),
        ("main/" + "c" * 40, "c" * 40),
        ("d" * 40, "d" * 40),
        ("v1.2.3", "v1.2.3"),
        ("release/1.0@sha1:" + "e" * 40, "e" * 40),
    ],
)
def test_controller_revision_formats(text: str, expected: str) -> None:
    assert revisions.controller_revision(text) == expected


def test_checkout_reads_the_old_commit_without_touching_the_worktree(repo: Path) -> None:
    old = commit(repo, {"apps/a.yaml": "image: v1\n", "other/x.yaml": "x: 1\n"}, "v1")
    new = commit(repo, {"apps/a.yaml": "image: v2\n"}, "v2")
    assert revisions.head_commit(repo) == new
    assert revisions.resolve_commit(repo, f"main@sha1:{old}") == old
    assert revisions.resolve_commit(repo, old[:10]) == old
    with revisions.checkout(repo, old, path="apps") as tree:
        assert (tree / "apps" / "a.yaml").read_text() == "image: v1\n"
        assert not (tree / "other").exists()
        kept = tree
    assert not kept.exists()
    assert (repo / "apps" / "a.yaml").read_text() == "image: v2\n"
    assert not revisions.is_dirty(repo)
    (repo / "apps" / "a.yaml").write_text("image: local\n")
    assert revisions.is_dirty(repo, path="apps") and not revisions.is_dirty(repo, path="other")


def test_unknown_revision_and_non_repo(repo: Path, tmp_path: Path) -> None:
    commit(repo, {"a.yaml": "a: 1\n"}, "one")
    with pytest.raises(InputError, match=r"not a commit.*fetch it first"):
        revisions.resolve_commit(repo, "main@sha1:" + "f" * 40)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert revisions.head_commit(plain) is None
    assert not revisions.is_git_repo(plain)
    assert revisions.is_git_repo(repo)
