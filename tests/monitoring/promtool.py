"""promtool, the real Prometheus rule checker and rule unit tester, built by tests/monitoring/build on first use.

    tool = build(progress=print)              # a no-op when cached (~/.cache/writeback/promtool/<version>/)
    tool.run("check", "rules", "rules.yaml")  # CompletedProcess; never raises on a non-zero exit

A failed build raises `PromtoolBuildError` naming the step (the script's `FAILED step '...'` line).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.buildscripts import run_build_script

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
    try:
        run = run_build_script(BUILD_SCRIPT, timeout=timeout, progress=progress)
    except OSError as exc:
        raise PromtoolBuildError(f"promtool build step 'start the build script' failed: {exc}; {retry}") from exc
    if run.code != 0:
        raise PromtoolBuildError(
            f"promtool build failed: {run.failed_step()}\n{retry}\n--- build log tail ---\n{run.tail()}"
        )
    last = run.last_line()
    path = Path(last) if last else None
    if path is None or not path.is_file():
        raise PromtoolBuildError(f"promtool build step 'find the binary' failed: {BUILD_SCRIPT} printed {run.out!r}")
    return Promtool(path=path)
