"""The Git side through GitPython: clone or fetch, branch from the base, commit patches, push the bot branch.

Credentials never reach ``.git/config`` or a log line: an HTTPS token is handed to git by a ``GIT_ASKPASS``
script that reads it from the child's environment; an SSH key goes through ``GIT_SSH_COMMAND``.
Guards: never push to the base branch nor to a protected pattern; never overwrite commits the bot did not author.
"""

from __future__ import annotations

import contextlib
import enum
import fnmatch
import logging
import os
import shlex
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# Without git on PATH, GitPython raises an ImportError at import (so every command, even --help, would fail);
# "quiet" defers that to the first git call, which raises ToolMissing below.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
import git

from writeback.adapters.confinement import escape
from writeback.errors import GitError, ToolMissing
from writeback.model import FilePatch

log = logging.getLogger(__name__)

_ASKPASS = """#!/bin/sh
case "$1" in
  Username*) printf '%s\\n' "$WRITEBACK_GIT_USERNAME" ;;
  *) printf '%s\\n' "$WRITEBACK_GIT_PASSWORD" ;;
esac
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class GitAuth:
    token: str | None = None  # HTTPS password/token
    username: str = "x-access-token"  # GitHub App tokens want this; GitLab accepts any name ("oauth2")
    ssh_key_file: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    name: str
    email: str


class PushStatus(enum.StrEnum):
    PUSHED = "pushed"
    HUMAN_COMMITS = "human-commits"
    LEASE_LOST = "lease-lost"  # the branch changed on the remote between the bot's look and its push: nothing pushed


@dataclass(frozen=True, slots=True, kw_only=True)
class PushResult:
    status: PushStatus
    sha: str
    foreign: tuple[str, ...] = ()  # "sha author-email" of commits the bot did not make
    by_another: bool = False  # PUSHED, but by another writer: the same commit was there already (a second replica)


class GitRepo:
    """One working clone of a target's repository, reused across cycles."""

    def __init__(
        self, *, url: str, workdir: Path, auth: GitAuth = GitAuth(), bot: Identity, protected: Sequence[str] = ()
    ) -> None:
        self.url = url
        self.protected = tuple(protected)  # glob patterns of branches never pushed to
        self.workdir = workdir
        self.bot = bot
        self._auth = auth
        self._repo: git.Repo | None = None

    # ------------------------------------------------------------ plumbing

    @contextlib.contextmanager
    def _env(self) -> Iterator[dict[str, str]]:
        env = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
        with tempfile.TemporaryDirectory(prefix="writeback-askpass-") as tmp:
            if self._auth.token:
                script = Path(tmp) / "askpass.sh"
                script.write_text(_ASKPASS, encoding="utf-8")
                script.chmod(stat.S_IRWXU)
                env |= {
                    "GIT_ASKPASS": str(script),
                    "WRITEBACK_GIT_USERNAME": self._auth.username,
                    "WRITEBACK_GIT_PASSWORD": self._auth.token,
                }
            if self._auth.ssh_key_file:
                key = shlex.quote(self._auth.ssh_key_file)
                env["GIT_SSH_COMMAND"] = f"ssh -i {key} -o IdentitiesOnly=yes -o StrictHostKeyChecking=accept-new"
            yield env

    def _clean(self, text: str) -> str:
        return text.replace(self._auth.token, "***") if self._auth.token else text

    def _git(self, *args: str, env: dict[str, str] | None = None) -> str:
        repo = self._require()
        try:
            with self._env() as base_env:
                # no credential helper may store the token (a global credential.helper=store would)
                argv = ["git", "-c", "credential.helper=", *args]
                out: str = repo.git.execute(argv, env={**os.environ, **base_env, **(env or {})})
                return out
        except git.GitCommandError as e:
            raise GitError(self._clean(f"git {args[0]} failed in {self.workdir}: {e.stderr.strip() or e}")) from e
        except git.GitCommandNotFound as e:
            raise ToolMissing("git is not on PATH: install git") from e

    def _require(self) -> git.Repo:
        if self._repo is None:
            raise GitError(f"{self.workdir}: not synced yet (call sync first)")
        return self._repo

    # ------------------------------------------------------------ reading

    def sync(self, *, base: str) -> str:
        """Clone or fetch; check out the base branch's latest commit (detached). Returns its sha.

        The clone is a cache: when an existing one cannot be brought up to date (a git killed mid-operation left
        its lock file or a cut index, a full disk cut an object), it is removed and cloned afresh once."""
        if (self.workdir / ".git").is_dir():
            try:
                return self._sync(base=base)
            except GitError as e:
                if not self._remote_reachable():
                    raise
                log.warning("%s: the clone is unusable (%s); cloning afresh", self.workdir, e)
                self._repo = None
                shutil.rmtree(self.workdir, ignore_errors=True)
        return self._sync(base=base)

    def _remote_reachable(self) -> bool:
        try:
            with self._env() as env:
                argv = ["git", "-c", "credential.helper=", "ls-remote", "--heads", "--", self.url]
                git.Git().execute(argv, env={**os.environ, **env})
        except (git.GitCommandError, git.GitCommandNotFound):
            return False
        return True

    def _sync(self, *, base: str) -> str:
        try:
            if (self.workdir / ".git").is_dir():
                self._repo = git.Repo(self.workdir)
                self._git("remote", "set-url", "origin", self.url)
            else:
                self.workdir.parent.mkdir(parents=True, exist_ok=True)
                with self._env() as env:
                    argv = [
                        "git",
                        "-c",
                        "credential.helper=",
                        "clone",
                        "--no-checkout",
                        "--",
                        self.url,
                        str(self.workdir),
                    ]
                    git.Git().execute(argv, env={**os.environ, **env})
                self._repo = git.Repo(self.workdir)
        except git.GitCommandError as e:
            raise GitError(self._clean(f"cannot clone {self.url}: {e.stderr.strip() or e}")) from e
        except git.GitCommandNotFound as e:
            raise ToolMissing("git is not on PATH: install git") from e
        except (git.InvalidGitRepositoryError, OSError) as e:
            raise GitError(f"{self.workdir}: not a usable git clone: {e}") from e
        self._git("fetch", "--prune", "--no-tags", "origin", "+refs/heads/*:refs/remotes/origin/*")
        sha = self.remote_sha(base, fetched=True)
        if sha is None:
            raise GitError(f"{self.url}: the base branch {base!r} does not exist")
        self._git("checkout", "--force", "--detach", sha)
        self._git("clean", "-ffdx")
        return sha

    def remote_sha(self, branch: str, *, fetched: bool = False) -> str | None:
        """The sha of a branch on the remote (from the last fetch when ``fetched``, else asked live)."""
        if fetched:
            try:
                return self._git("rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{branch}^{{commit}}")
            except GitError:
                return None
        out = self._git("ls-remote", "origin", f"refs/heads/{branch}")
        return out.split()[0] if out.strip() else None

    def foreign_commits(self, *, branch: str, base: str) -> tuple[str, ...]:
        """Commits on the remote bot branch beyond its merge-base with base that the bot did not author."""
        self._git("fetch", "--no-tags", "origin", f"+refs/heads/{branch}:refs/remotes/origin/{branch}")
        log = self._git("log", "--format=%H %ae", f"refs/remotes/origin/{base}..refs/remotes/origin/{branch}")
        lines = [line for line in log.splitlines() if line.strip()]
        return tuple(line for line in lines if line.split(" ", 1)[1].lower() != self.bot.email.lower())

    def contains(self, *, commit: str, ancestor: str) -> bool:
        """Whether ``commit`` has ``ancestor`` in its history (or is it); False when either is unknown here."""
        try:
            self._git("merge-base", "--is-ancestor", ancestor, commit)
        except GitError:  # exit 1: not an ancestor; 128: an unknown commit
            return False
        return True

    def read(self, path: str) -> str | None:
        """A file of the current checkout (the base after ``sync``); None when absent."""
        p = self._safe_path(path)
        return p.read_text(encoding="utf-8") if p.is_file() else None

    def base_moved_under(self, *, head: str, base_sha: str, paths: Sequence[str]) -> bool:
        """True when the base changed any of ``paths`` since the bot branch ``head`` was made from it (so the PR
        would conflict or revert those changes). False when ``head`` is unknown here: nothing to say then."""
        if not head or not paths:
            return False
        try:
            fork = self._git("merge-base", head, base_sha)
        except GitError:
            return False
        if fork == base_sha:
            return False
        return bool(self._git("diff", "--name-only", fork, base_sha, "--", *paths).strip())

    def diff(self, old: str, new: str) -> str:
        return self._git("diff", "--stat", old, new)

    # ------------------------------------------------------------ writing

    def _safe_path(self, path: str) -> Path:
        """``path`` in the clone; GitError when it leaves it: a ``..``, ``.git``, or a symbolic link on the way that
        resolves outside (``adapters.confinement``)."""
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts or pure.parts[0] == ".git":
            raise GitError(f"refusing to write outside the repository: {path!r}")
        target = self.workdir.joinpath(*pure.parts)
        why = escape(self.workdir, target)
        if why is not None:
            raise GitError(f"refusing to read or write {path!r}: {why}")
        return target

    def commit(
        self,
        *,
        base_sha: str,
        branch: str,
        patches: Sequence[FilePatch],
        message: str,
        author: Identity | None = None,
        signoff: bool = False,
    ) -> str | None:
        """Commit ``patches`` on a fresh local ``branch`` from ``base_sha``. None when nothing changes.

        Each patch's ``before`` must equal the file at the base, else GitError "base moved".
        """
        self._git("checkout", "--force", "-B", branch, base_sha)
        for patch in patches:
            target = self._safe_path(patch.path)
            if target.is_symlink():  # an edit goes to the real path (planning finds it), never through a link
                raise GitError(f"refusing to write {patch.path!r}: it is a symbolic link (edit the file it points to)")
            current = target.read_text(encoding="utf-8") if target.is_file() else None
            if current != patch.before:
                raise GitError(f"base moved: {patch.path} changed on the base branch since it was planned")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(patch.after, encoding="utf-8")
            self._git("add", "--", patch.path)
        if not self._git("diff", "--cached", "--name-only").strip():
            return None
        who = author or self.bot
        env = {
            "GIT_AUTHOR_NAME": who.name,
            "GIT_AUTHOR_EMAIL": who.email,
            "GIT_COMMITTER_NAME": self.bot.name,
            "GIT_COMMITTER_EMAIL": self.bot.email,
        }
        args = ["-c", "commit.gpgsign=false", "commit", "--no-verify", "--quiet", "-m", message]
        self._git(*args, *(["--signoff"] if signoff else []), env=env)
        return self._git("rev-parse", "HEAD")

    def push(self, *, branch: str, base: str, expected: str | None) -> PushResult:
        """Push HEAD to ``branch`` with a lease on ``expected`` (None: the branch must not exist yet).

        Refuses the base branch, and a remote branch holding commits the bot did not author.
        """
        name = branch.removeprefix("refs/heads/")
        if name == base.removeprefix("refs/heads/") or not name:
            raise GitError(f"refusing to push to the base branch {base!r}")
        hit = next((p for p in self.protected if fnmatch.fnmatchcase(name, p)), None)
        if hit is not None:
            why = f"it matches the protected pattern {hit!r} (git.protected_branches)"
            raise GitError(f"refusing to push to {name!r}: {why}")
        sha = self._git("rev-parse", "HEAD")
        if expected is not None:
            foreign = self.foreign_commits(branch=branch, base=base)
            if foreign:
                return PushResult(status=PushStatus.HUMAN_COMMITS, sha=expected, foreign=foreign)
        lease = f"--force-with-lease=refs/heads/{branch}:{expected or ''}"
        for attempt in range(3):
            try:
                self._git("push", "--porcelain", "--no-verify", lease, "origin", f"{sha}:refs/heads/{branch}")
                return PushResult(status=PushStatus.PUSHED, sha=sha)
            except GitError:
                # Refused because the branch is no longer what the bot saw (another writer created or moved it)?
                # Then it is a lost race, not a failure. Still what the bot saw: another writer may have held the
                # ref's lock at that moment ("cannot lock ref"), so push again; anything else is raised at last.
                now = self.remote_sha(branch)
                if now != expected and now != sha:
                    return PushResult(status=PushStatus.LEASE_LOST, sha=now or "")
                if now == sha:  # another writer pushed the very same commit (same patch, base and second)
                    return PushResult(status=PushStatus.PUSHED, sha=sha, by_another=True)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")
