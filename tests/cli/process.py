"""Running the real installed ``writeback`` (and ``kubectl-writeback``) console scripts, with pipes or a pty."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # the venv's bin: where pip installed the console scripts
DEMO = ["--live", "examples/hotfix/live.yaml", "--repo", ".", "--path", "examples/hotfix/gitops"]
ESC = "\x1b["


def script(name: str = "writeback") -> Path:
    path = BIN / name
    assert path.is_file(), f"{path} is missing: reinstall (pip install -e .) so that pip writes the console scripts"
    return path


def environment(**extra: str) -> dict[str, str]:
    """The caller's environment without colour or kubeconfig settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "KUBECONFIG", "TERM")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def writeback(
    *args: str, stdin: str | None = None, cwd: Path = ROOT, env: dict[str, str] | None = None, name: str = "writeback"
) -> subprocess.CompletedProcess[str]:
    """The real process with pipes for stdin, stdout and stderr."""
    return subprocess.run(
        [str(script(name)), *args], input=stdin if stdin is not None else "", cwd=cwd,
        env=env if env is not None else environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@dataclass(frozen=True)
class TtyRun:
    code: int
    tty: str  # what the terminal received (the streams attached to it)
    piped: str  # the stream that stayed a pipe


def on_terminal(
    *args: str, stream: str = "stdout", cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 120
) -> TtyRun:
    """The real process with ``stream`` ("stdout", "stderr" or "both") on a pseudo-terminal, the other a pipe."""
    primary, secondary = pty.openpty()
    os.set_blocking(primary, False)
    env = dict(env if env is not None else environment())
    env.setdefault("TERM", "xterm-256color")
    out = secondary if stream in ("stdout", "both") else subprocess.PIPE
    err = secondary if stream in ("stderr", "both") else subprocess.PIPE
    proc = subprocess.Popen([str(script()), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    os.close(secondary)
    received = bytearray()
    deadline = time.monotonic() + timeout
    while True:
        ready, _, _ = select.select([primary], [], [], 0.1)
        chunk = b""
        if ready:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: every end of the terminal in the process is closed
                chunk = b""
            received += chunk
        if not chunk and proc.poll() is not None:
            break
        assert time.monotonic() < deadline, f"writeback {' '.join(args)} did not finish in {timeout}s"
    piped = proc.stdout if proc.stdout is not None else proc.stderr
    rest = piped.read().decode() if piped is not None else ""
    os.close(primary)
    return TtyRun(code=proc.wait(), tty=received.decode(errors="replace").replace("\r\n", "\n"), piped=rest)
