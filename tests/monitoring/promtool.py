"""promtool, the real Prometheus rule checker and rule unit tester, built by tests/monitoring/build on first use.

    tool = build(progress=print)              # a no-op when cached (~/.cache/writeback/promtool/<version>/)
    tool.run("check", "rules", "rules.yaml")  # CompletedProcess; never raises on a non-zero exit

A failed build raises `PromtoolBuildError` naming the step (the script's `FAILED step '...'` line).
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BUILD_SCRIPT = Path(__file__).resolve().parent / "build"


class PromtoolBuildError(RuntimeError):
    """tests/monitoring/build failed; the message names the step."""


@dataclass(frozen=True, kw_only=True)
class Promtool:
    path: Path

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.path), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
        )


def build(*, timeout: float = 3600, progress: Callable[[str], None] | None = None) -> Promtool:
    """Run the build script (its stderr lines go to ``progress``) and return the built promtool."""
    retry = f"retry with: {BUILD_SCRIPT}"
    log: list[str] = []
    try:
        proc = subprocess.Popen(
            [str(BUILD_SCRIPT)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    except OSError as exc:
        raise PromtoolBuildError(f"promtool build step 'start the build script' failed: {exc}; {retry}") from exc
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        assert proc.stderr is not None and proc.stdout is not None
        for line in proc.stderr:
            log.append(line.rstrip("\n"))
            if progress is not None:
                progress(line.rstrip("\n"))
        out = proc.stdout.read()
        code = proc.wait()
    finally:
        killer.cancel()
    if code != 0:
        failed = [line for line in log if "FAILED" in line]
        step = failed[0] if failed else f"{BUILD_SCRIPT} exited {code}" + (" (timed out)" if code < 0 else "")
        tail = "\n".join(log[-25:])
        raise PromtoolBuildError(f"promtool build failed: {step}\n{retry}\n--- build log tail ---\n{tail}")
    lines = out.strip().splitlines()
    path = Path(lines[-1]) if lines else None
    if path is None or not path.is_file():
        raise PromtoolBuildError(f"promtool build step 'find the binary' failed: {BUILD_SCRIPT} printed {out!r}")
    return Promtool(path=path)
