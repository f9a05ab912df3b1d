"""Progress per target and per stage for long interactive runs (``run --once``, ``plan`` on a terminal).

On a terminal, a rich progress display with one line per target; anywhere else, nothing at all.

    with stage_progress(targets=[t.name for t in targets]) as progress:
        progress.stage("prod", "clone")          # also the ``on_stage`` hook of CycleOptions
        progress.finish("prod", "created")
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TextIO

# The steps of one target, in order (``clone`` and ``publish`` only in ``run``; ``dry-run`` only with a cluster).
STAGES: tuple[str, ...] = (
    "clone",
    "read the live dump",
    "read Git",
    "snapshot",
    "dry-run",
    "compare",
    "locate and patch",
    "publish",
)


class StageProgress(Protocol):
    def stage(self, target: str, stage: str) -> None: ...
    def finish(self, target: str, outcome: str) -> None: ...


class Silent:
    """Not a terminal: print nothing."""

    def stage(self, target: str, stage: str) -> None:
        return None

    def finish(self, target: str, outcome: str) -> None:
        return None


class RichStages:
    """One rich task per target; its bar advances stage by stage."""

    def __init__(self, *, progress: Any, targets: Sequence[str]) -> None:
        self._progress = progress
        self._tasks = {t: progress.add_task(f"{t}: waiting", total=len(STAGES), start=False) for t in targets}

    def stage(self, target: str, stage: str) -> None:
        task = self._tasks.get(target)
        if task is None:
            return
        self._progress.start_task(task)
        done = STAGES.index(stage) if stage in STAGES else 0
        self._progress.update(task, completed=done, description=f"{target}: {stage}")

    def finish(self, target: str, outcome: str) -> None:
        task = self._tasks.get(target)
        if task is not None:
            self._progress.update(task, completed=len(STAGES), description=f"{target}: {outcome}")


@contextmanager
def stage_progress(
    *, targets: Sequence[str], stream: TextIO | None = None, transient: bool = False
) -> Iterator[StageProgress]:
    """``transient``: the display is cleared when the work is done (``diff``, ``plan``: the output follows)."""
    out = stream if stream is not None else sys.stderr
    if not out.isatty():
        yield Silent()
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(file=out), transient=transient) as progress:
        yield RichStages(progress=progress, targets=targets)
