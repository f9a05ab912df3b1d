"""The real helm CLI for tests (v3.22.0), built from the Go module proxy by tests/helm/build and cached outside
the repo (~/.cache/writeback/helm/<version>/bin/helm). See docs/helm-tests.md."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.buildscripts import run_build_script

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build"


class HelmBuildError(RuntimeError):
    """The helm CLI could not be built; the message names the step."""


def build_helm(*, timeout: float = 3600, progress: Callable[[str], None] | None = None) -> Path:
    """Run tests/helm/build (a no-op when cached) and return the helm binary; `progress` gets its log lines."""
    retry = f"retry with: {BUILD_SCRIPT}  (see docs/helm-tests.md)"
    try:
        run = run_build_script(BUILD_SCRIPT, timeout=timeout, progress=progress)
    except OSError as exc:
        raise HelmBuildError(f"helm build step failed to run: {exc}; {retry}") from exc
    if run.code != 0:
        step = run.failed_step(also=("not on PATH",))
        raise HelmBuildError(f"helm build failed: {step}\n{retry}\n--- build log tail ---\n{run.tail()}")
    last = run.last_line()
    binary = Path(last) / "helm" if last else None
    if binary is None or not binary.is_file():
        raise HelmBuildError(f"{BUILD_SCRIPT} left no helm binary (printed {run.out.strip()!r}); {retry}")
    return binary
