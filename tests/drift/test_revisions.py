"""Reading the repo at a revision with real git."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.gitrepos import commit, init_repo
from writeback.adapters.git import revisions
from writeback.errors import InputError


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    init_repo(r, name="T", email="t@example.com")
    return r


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
    old = commit(repo, "v1", files={"apps/a.yaml": "image: v1\n", "other/x.yaml": "x: 1\n"})
    new = commit(repo, "v2", files={"apps/a.yaml": "image: v2\n"})
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
    commit(repo, "one", files={"a.yaml": "a: 1\n"})
    with pytest.raises(InputError, match=r"not a commit.*fetch it first"):
        revisions.resolve_commit(repo, "main@sha1:" + "f" * 40)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert revisions.head_commit(plain) is None
    assert not revisions.is_git_repo(plain)
    assert revisions.is_git_repo(repo)
