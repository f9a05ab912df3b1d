"""Reading the Git repo at a revision (real git): the one the GitOps controller last applied, or HEAD.

``git archive <sha>`` is extracted into a temporary directory, so the working tree is never touched; nothing is
extracted outside it.
"""

from __future__ import annotations

import functools
import io
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from writeback.errors import GitError, InputError, ToolMissing

_SHA = re.compile(r"^[0-9a-f]{7,64}$")
# Flux: "main@sha1:<sha>" (v2), "main/<sha>" (older), "sha1:<sha>"; Argo CD: the bare sha
_FLUX = re.compile(
    r"^(?:(?P<ref>.+?)[@/])?(?:sha1|sha256):(?P<sha>[0-9a-f]{7,64})$|^(?P<ref2>.+)/(?P<sha2>[0-9a-f]{40})$"
)


def controller_revision(text: str) -> str:
    """The commit in an Argo CD ``status.sync.revision`` or Flux ``status.lastAppliedRevision``."""
    value = text.strip()
    m = _FLUX.match(value)
    if m:
        return m.group("sha") or m.group("sha2")
    return value


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("git") is None:
        raise ToolMissing("git is not on PATH")
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GitError(f"git {' '.join(args)} in {repo}: {e}") from e


def is_git_repo(repo: Path) -> bool:
    r = _git(repo, "rev-parse", "--is-inside-work-tree")
    return r.returncode == 0 and r.stdout.strip() == b"true"


def toplevel(directory: Path) -> Path | None:
    """The top of the work tree ``directory`` is in (``git rev-parse --show-toplevel``); None outside one, or when
    git is not installed."""
    try:
        r = _git(directory, "rev-parse", "--show-toplevel")
    except ToolMissing:
        return None
    out = r.stdout.decode(errors="replace").strip()
    return Path(out) if r.returncode == 0 and out else None


def head_commit(repo: Path) -> str | None:
    """HEAD's sha, or None when ``repo`` is no git repo (or has no commit)."""
    r = _git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    return r.stdout.decode().strip() if r.returncode == 0 else None


def resolve_commit(repo: Path, revision: str) -> str:
    """A revision (sha, branch, tag, Flux/Argo CD status text) -> the full commit sha."""
    rev = controller_revision(revision)
    r = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if r.returncode != 0:
        hint = " (fetch it first)" if _SHA.match(rev) else ""
        raise InputError(f"revision {revision!r}: not a commit in the repository {repo}{hint}")
    return r.stdout.decode().strip()


def is_dirty(repo: Path, *, path: str = ".") -> bool:
    """Uncommitted changes to tracked files under ``path``."""
    r = _git(repo, "status", "--porcelain", "--untracked-files=no", "--", path)
    return r.returncode == 0 and bool(r.stdout.strip())


def pristine(repo: Path, *, path: str = ".") -> bool:
    """Nothing under ``path`` differs from HEAD: no uncommitted change, and no untracked or ignored file (a reader
    of the working tree would read those too)."""
    r = _git(repo, "status", "--porcelain", "--untracked-files=all", "--ignored=matching", "--", path)
    return r.returncode == 0 and not r.stdout.strip()


def tree_ids(repo: Path, revisions: tuple[str, ...], *, path: str) -> tuple[str, ...] | None:
    """The ids of the tree at ``path`` in each commit of ``revisions`` (``git rev-parse C:PATH``, one process): equal
    ids, equal contents. None when ``path`` is missing at one of them, or git cannot tell."""
    where = "" if path.strip("/") in ("", ".") else path.strip("/")
    r = _git(repo, "rev-parse", *(f"{c}^{{tree}}" if not where else f"{c}:{where}" for c in revisions))
    ids = tuple(r.stdout.decode(errors="replace").split())
    return ids if r.returncode == 0 and len(ids) == len(revisions) else None


@functools.lru_cache(maxsize=64)
def has_links(repo: Path, tree: str) -> bool:
    """Does the tree hold a symbolic link anywhere (its target's contents are not part of the tree's id)? True
    when git cannot tell. Kept per tree id: the id fixes the tree's entries."""
    r = _git(repo, "ls-tree", "-r", "-z", tree)
    if r.returncode != 0:
        return True
    return any(entry.startswith(b"120000 ") for entry in r.stdout.split(b"\0"))


def _keep_links(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """The ``data`` filter, except that a symbolic link is kept as Git has it even when it points outside: the tree
    then holds what the working tree holds, and the readers refuse it alike (``adapters.confinement``) instead of
    the extraction failing. Nothing is ever written through one: each member's own path must stay inside."""
    if member.issym():
        return tarfile.tar_filter(member, dest)
    return tarfile.data_filter(member, dest)


@contextmanager
def checkout(repo: Path, commit: str, *, path: str = ".") -> Iterator[Path]:
    """The files under ``path`` at ``commit``, in a temporary directory (the tree root) that is removed after."""
    args = ["archive", "--format=tar", commit]
    if path not in ("", "."):
        args += ["--", path]
    r = _git(repo, *args)
    if r.returncode != 0:
        msg = r.stderr.decode(errors="replace").strip()
        raise GitError(f"git archive {commit} -- {path} in {repo}: {msg}")
    with tempfile.TemporaryDirectory(prefix="writeback-rev-") as tmp:
        try:
            with tarfile.open(fileobj=io.BytesIO(r.stdout)) as tar:
                tar.extractall(tmp, filter=_keep_links)
        except tarfile.FilterError as e:
            raise GitError(f"git archive {commit} -- {path} in {repo}: refused to extract: {e}") from e
        (Path(tmp) / path).mkdir(parents=True, exist_ok=True)  # a path absent at that commit is an empty tree
        yield Path(tmp)


def change_times(repo: Path, commit: str, *, path: str = ".", since: int) -> dict[str, int] | None:
    """The files under ``path`` (relative to ``repo``) that commits up to ``commit`` changed after ``since`` (seconds
    since the epoch, committer time), each with its last change; None when git cannot tell (the caller then
    settles nothing). A file not listed last changed at or before ``since``."""
    # the first-parent line, a merge as the files it brought: a change reaches the branch when that commit does
    r = _git(repo, "log", "--first-parent", "--diff-merges=first-parent", "--relative", "--no-renames",
             "--format=%x00%ct", "--name-only", f"--since={since}", commit, "--", path)  # fmt: skip
    if r.returncode != 0:
        return None
    out: dict[str, int] = {}
    at = 0
    for line in r.stdout.decode(errors="surrogateescape").splitlines():
        if line.startswith("\0"):
            at = int(line[1:])
        elif line:
            if line.startswith('"'):
                return None  # a quoted name (core.quotePath): leave it to the normal path
            out[line] = max(out.get(line, at), at)
    return out
