"""Helpers for tests that run `writeback run` as a process: start and stop it, wait on it, read its /metrics."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_writeback(
    config: Mapping[str, Any], *, workdir: Path, env: Mapping[str, str]
) -> tuple[subprocess.Popen[bytes], Path]:
    """`writeback run --config workdir/writeback.yaml` in a session of its own, ``env`` added to this process's
    environment; the process and the file its stderr (the log) goes to."""
    config_path = workdir / "writeback.yaml"
    config_path.write_text(json.dumps(config))  # JSON is YAML
    log = workdir / "writeback.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "writeback.cli", "run", "--config", str(config_path)],
            stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, **env}, start_new_session=True,
        )  # fmt: skip
    return proc, log


def stop_writeback(proc: subprocess.Popen[bytes], *, timeout: float) -> int:
    """SIGTERM (if it still runs) and its exit code; if it has not exited within ``timeout``, its whole process
    group is killed and ``TimeoutExpired`` raised."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise


def stopped_records(proc: subprocess.Popen[bytes], log: Path, *, secret: str) -> list[dict[str, Any]]:
    """Stop the service (SIGTERM): it exits 0 and its log never holds ``secret`` (the forge token); its log records
    (not a TTY: every line is JSON)."""
    code = stop_writeback(proc, timeout=40)
    output = log.read_text()
    assert code == 0, output[-4000:]
    assert secret not in output
    return [json.loads(line) for line in output.splitlines() if line.strip()]


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
