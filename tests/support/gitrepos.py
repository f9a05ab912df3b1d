"""Real git for the tests (the one home of git fixtures): run the CLI, make a repository or a bare remote on branch
main, commit files; ``GitRemote`` is the `git_remote` fixture's bare remote with a working clone."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


def git(*args: str, cwd: Path | None = None) -> str:
    """Runs the git CLI; its stdout, stripped (``CalledProcessError`` when git fails)."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def write_files(root: Path, files: Mapping[str, str]) -> None:
    """Writes each text to its path relative to ``root`` (UTF-8, bytes as given), making folders as needed."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode())


def init_repo(repo: Path, *, name: str = "Writeback Test", email: str = "writeback-test@example.com") -> None:
    """An empty repository on branch main with a user configured and commit signing off."""
    repo.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "--initial-branch=main", cwd=repo)
    configure_user(repo, name=name, email=email)


def configure_user(repo: Path, *, name: str = "Writeback Test", email: str = "writeback-test@example.com") -> None:
    """The committer of ``repo`` and commit signing off."""
    git("config", "user.name", name, cwd=repo)
    git("config", "user.email", email, cwd=repo)
    git("config", "commit.gpgsign", "false", cwd=repo)


def commit(repo: Path, message: str, *, files: Mapping[str, str] | None = None) -> str:
    """Writes ``files`` (if given), then commits everything in the working tree; the new commit's sha."""
    write_files(repo, files or {})
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


def seed_bare(
    bare: Path, seed: Path, files: Mapping[str, str], *, name: str = "A", email: str = "a@example.com"
) -> None:
    """A bare remote whose main holds ``files`` in one commit ("init" by ``name``), pushed from the clone ``seed``."""
    git("init", "-q", "--bare", "--initial-branch=main", str(bare))
    git("clone", "-q", str(bare), str(seed))
    write_files(seed, files)
    git("add", "-A", cwd=seed)
    git("-c", f"user.email={email}", "-c", f"user.name={name}", "commit", "-q", "-m", "init", cwd=seed)
    git("push", "-q", "origin", "HEAD:refs/heads/main", cwd=seed)


@dataclass(frozen=True, kw_only=True)
class GitRemote:
    """A bare repository (the remote) and a working clone on branch main, with a user configured."""

    bare: Path
    work: Path

    @classmethod
    def create(cls, *, bare: Path, work: Path) -> GitRemote:
        git("init", "-q", "--bare", "--initial-branch=main", str(bare))
        git("clone", "-q", str(bare), str(work))
        remote = cls(bare=bare, work=work)
        remote.git("symbolic-ref", "HEAD", "refs/heads/main")
        configure_user(work)
        return remote

    def git(self, *args: str) -> str:
        """git in the clone; its stdout (not stripped); AssertionError with git's stderr when it fails."""
        done = subprocess.run(["git", *args], cwd=self.work, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done.stdout

    def commit_all(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def push(self) -> None:
        self.git("push", "-q", "-u", "origin", "HEAD:refs/heads/main")
