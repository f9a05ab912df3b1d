"""Helpers for tests that run `writeback run` as a process: a free port, waiting on it, reading its /metrics."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    predicate: Callable[[], object], *, timeout: float, what: str, proc: subprocess.Popen[bytes], log: Path
) -> None:
    """Polls ``predicate`` until it holds; fails with the process's log if it exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"writeback exited ({proc.returncode}) while waiting for {what}:\n{log.read_text()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; log tail:\n{log.read_text()[-4000:]}")
        time.sleep(0.25)


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples called ``name`` in a Prometheus text exposition whose labels include ``labels``."""
    return sum(
        (
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
        ),
        0.0,
    )
