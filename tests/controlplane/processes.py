"""Process helpers for the test control plane: free ports, process groups, parent-death, robust stopping."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

STOP_GRACE = 5.0
CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or stopped; the message says which step and how to retry."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn(cmd: Sequence[str], *, log: Path, detach: bool, env: Mapping[str, str] | None = None) -> int:
    """Start `cmd` in its own process group (session); tie it to our life unless `detach`. `env` is added to
    this process's environment."""
    setpriv = shutil.which("setpriv")
    if not detach and setpriv:
        cmd = [setpriv, "--pdeathsig", "KILL", "--", *cmd]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **env} if env is not None else None,
        )
    CHILDREN[proc.pid] = proc
    return proc.pid


def running(pid: int) -> bool:
    proc = CHILDREN.get(pid)
    if proc is not None:
        return proc.poll() is None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies still count for killpg: look for a live member.
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def kill_group(pid: int) -> None:
    """SIGTERM the process group led by `pid`, SIGKILL it after a grace period, and wait until it is gone."""
    for sig, grace in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc = CHILDREN.get(pid)
            if proc is not None:
                proc.poll()
            if not group_alive(pid):
                CHILDREN.pop(pid, None)
                return
            time.sleep(0.05)
    raise ControlPlaneError(f"process group {pid} survived SIGKILL")
