"""Running a build script of the Go-built test infrastructure (tests/controlplane/build, tests/flux/build,
tests/monitoring/build): its stderr streamed line by line, a time limit, and the step that failed.

Each script prints its progress on stderr (``FAILED step '...'`` when a step fails) and, last on stdout, where
the result is. Callers turn a failure into their own error with :meth:`ScriptRun.failed_step` and
:meth:`ScriptRun.tail`.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True, kw_only=True)
class ScriptRun:
    script: Path
    code: int  # negative: killed (the time limit)
    out: str  # stdout
    log: tuple[str, ...]  # stderr, line by line

    def failed_step(self, *, also: tuple[str, ...] = ()) -> str:
        """The script's first ``FAILED`` line (or one holding any of ``also``), else how it exited."""
        marks = ("FAILED", *also)
        failed = [line for line in self.log if any(m in line for m in marks)]
        timed_out = " (timed out)" if self.code < 0 else ""
        return failed[0] if failed else f"{self.script} exited {self.code}{timed_out}"

    def tail(self, lines: int = 25) -> str:
        return "\n".join(self.log[-lines:])

    def last_line(self) -> str | None:
        """The last line of stdout: where the script says the result is."""
        lines = self.out.strip().splitlines()
        return lines[-1] if lines else None


def run_build_script(script: Path, *, timeout: float, progress: Callable[[str], None] | None = None) -> ScriptRun:
    """Run ``script`` (a no-op when its result is cached), giving each stderr line to ``progress``; killed after
    ``timeout`` seconds. ``OSError`` when it cannot be started."""
    proc = subprocess.Popen(
        [str(script)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    log: list[str] = []
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
    return ScriptRun(script=script, code=code, out=out, log=tuple(log))


def needed(session: pytest.Session, fixtures: Collection[str]) -> bool:
    """Does any selected test use one of ``fixtures`` (and is this more than ``--collect-only``)?"""
    if session.config.option.collectonly:
        return False
    return any(set(fixtures) & set(getattr(item, "fixturenames", ())) for item in session.items)


@contextlib.contextmanager
def terminal_progress(session: pytest.Session) -> Iterator[Callable[[str], None]]:
    """A ``progress`` callback that writes build lines to the terminal, output capture off meanwhile: a build
    before the first test (``pytest_collection_finish``) shows how it goes and counts against no test's timeout."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    capture = session.config.pluginmanager.get_plugin("capturemanager")

    def progress(line: str) -> None:
        if reporter is not None:
            reporter.write_line(line)

    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        yield progress
