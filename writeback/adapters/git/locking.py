"""One writer per clone: the lock every user of a target's clone (``workdir/<target>``) holds while it uses it.

The service's cycles, its break-glass backports, ``run --once``, and ``break-glass end|expire --config`` on the
service's own host all use ``state_dir/repos/<target>``: a fetch, a checkout of the bot branch, a commit and a
push from two processes at once would corrupt each other's work (git's ``index.lock``, a checkout under another's
commit), and one that finds the clone unusable clones it afresh under the other. So each holds an exclusive
``flock`` on ``workdir/<target>.lock`` (beside the clone: ``git clean`` and a fresh clone never remove it) for the
whole of its use, from the fetch to the push. Within one process, threads take turns too (a ``flock`` held by one
open file is not taken again by the same process through it), and a thread that holds it may take it again.

A process that dies lets go of its ``flock`` with it: no stale lock is ever left. One that waits longer than
``timeout`` gets a GitError naming the clone and the process that holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from writeback.errors import GitError

__all__ = ["LOCK_TIMEOUT_SECONDS", "clone_lock", "lock_path"]

LOCK_TIMEOUT_SECONDS = 600.0  # longer than any cycle takes; a process stuck longer than that is a failure
_POLL = 0.2

_guard = threading.Lock()
_held: dict[Path, tuple[threading.RLock, list[int]]] = {}  # lock file -> (this process's turn, [depth, fd])


def lock_path(clone: Path) -> Path:
    """The lock file of a clone: beside it, ``<clone>.lock``."""
    return clone.parent / f"{clone.name}.lock"


@contextlib.contextmanager
def clone_lock(clone: Path, *, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """Hold the clone at ``clone`` exclusively (see the module docstring)."""
    path = lock_path(clone).absolute()
    with _guard:
        turn, state = _held.setdefault(path, (threading.RLock(), [0, -1]))
    deadline = time.monotonic() + timeout
    if not turn.acquire(timeout=timeout):
        raise GitError(f"{clone}: another thread of this process held the clone for more than {timeout:.0f}s")
    try:
        if state[0] == 0:
            state[1] = _flock(path, clone=clone, deadline=deadline, timeout=timeout)
        state[0] += 1
        try:
            yield
        finally:
            state[0] -= 1
            if state[0] == 0:
                fd, state[1] = state[1], -1
                os.close(fd)  # lets go of the flock
    finally:
        turn.release()


def _flock(path: Path, *, clone: Path, deadline: float, timeout: float) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    holder = _holder(fd)
                    raise GitError(f"{clone} is in use by another writeback process{holder} for more than "
                                   f"{timeout:.0f}s; nothing was done to it") from None  # fmt: skip
                time.sleep(_POLL)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # who holds it, for the message of one that waits
        return fd
    except BaseException:
        os.close(fd)
        raise


def _holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
