"""The one poller of the tests: wait until something holds, or fail saying what did not happen and why.

    took = wait_until("the PR", lambda: shop.forge.prs, timeout=60)                  # seconds it took
    wait_until("one cycle", cycled, timeout=60, process=proc, stderr=log)            # ends early if proc dies
    wait_until("leases split", split, timeout=30, context=cluster.describe)          # more on a timeout
    stays("never reverted", lambda: live() == edited, seconds=10)                    # the opposite: no change

A wait that times out, or whose ``process`` exits first, raises ``AssertionError`` naming ``what`` (plus the
process's stderr, or ``context()``): the test fails with the reason on screen, never a bare "condition not met".
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STDERR_TAIL = 4000  # characters of a process's stderr in a failure message


def wait_until(
    what: str,
    predicate: Callable[[], object],
    *,
    timeout: float,
    step: float = 0.1,
    process: subprocess.Popen[Any] | None = None,
    stderr: Path | None = None,
    context: Callable[[], str] | None = None,
) -> float:
    """Poll ``predicate`` every ``step`` seconds until it is truthy; the seconds that took.

    ``AssertionError`` naming ``what`` when ``timeout`` seconds pass first, or at once when ``process`` exits
    first. The message holds the process's stderr (the file ``stderr`` if its stderr goes to a file, else its
    stderr pipe), and ``context()`` if given (the state that explains a timeout)."""
    start = time.monotonic()
    while not predicate():
        if process is not None and process.poll() is not None:
            raise AssertionError(
                f"{what}: the process exited ({process.returncode}) first" + _details(process, stderr, context)
            )
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what}: not within {timeout:g}s" + _details(process, stderr, context))
        time.sleep(step)
    return time.monotonic() - start


def stays(what: str, check: Callable[[], object], *, seconds: float, step: float = 0.2) -> None:
    """``check()`` holds throughout ``seconds`` (polled every ``step``): something did NOT happen in that time.
    ``AssertionError`` naming ``what`` the first time it does not."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check(), what
        time.sleep(step)


def _details(process: subprocess.Popen[Any] | None, stderr: Path | None, context: Callable[[], str] | None) -> str:
    parts: list[str] = []
    if context is not None:
        parts.append(context())
    if stderr is not None:
        parts.append(f"stderr ({stderr}), its tail:\n{stderr.read_text(errors='replace')[-STDERR_TAIL:]}")
    elif process is not None and process.stderr is not None and process.poll() is not None:
        err = process.communicate()[1]
        text = err.decode(errors="replace") if isinstance(err, bytes) else str(err or "")
        parts.append(f"stderr, its tail:\n{text[-STDERR_TAIL:]}")
    return "".join(f"\n{p}" for p in parts)
