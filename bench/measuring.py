"""Measuring for the benchmarks: runs interleaved round by round, in-process or as whole processes.

In-process (``interleaved``): wall time and peak traced Python memory of a call. Whole processes
(``run_process``): wall time, CPU time (user + system, the process and its waited-for children, e.g. git) and
peak resident memory, from ``os.wait4``.
"""

from __future__ import annotations

import os
import selectors
import statistics
import subprocess
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


def measure(fn: Callable[[], object]) -> tuple[float, int]:
    """Seconds and peak traced bytes of one call."""
    tracemalloc.start()
    t0 = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak


def interleaved(runs: Mapping[str, Callable[[], object]], *, rounds: int) -> dict[str, list[tuple[float, int]]]:
    """Each run measured once per round, in the given order, so the machine's noise hits all alike."""
    rows: dict[str, list[tuple[float, int]]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            rows[name].append(measure(fn))
    return rows


def print_table(rows: Mapping[str, list[tuple[float, int]]], *, baseline: str, width: int) -> None:
    """Median seconds and peak MiB of each run, and their ratios to ``baseline``."""
    base_t = statistics.median(t for t, _ in rows[baseline])
    base_m = statistics.median(m for _, m in rows[baseline])
    print(f"{'run':{width}} {'median s':>10} {'ratio':>7} {'peak MiB':>9} {'ratio':>7}")
    for name, vals in rows.items():
        t = statistics.median(v for v, _ in vals)
        m = statistics.median(v for _, v in vals)
        print(f"{name:{width}} {t:10.3f} {t / base_t:7.2f} {m / 2**20:9.1f} {m / base_m:7.2f}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessRun:
    """One whole process: wall and CPU seconds, peak RSS (bytes), exit code and output."""

    wall: float
    cpu: float
    peak_rss: int
    returncode: int
    stdout: str
    stderr: str


def run_process(
    cmd: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None, stdin: str | None = None
) -> ProcessRun:
    """Run ``cmd`` to completion and measure it (``os.wait4``: its own rusage, not the benchmark's).

    ``stdin``: a file to read standard input from.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    t0 = time.perf_counter()
    source = open(stdin, "rb") if stdin else None  # noqa: SIM115 (closed below, after the child has it)
    proc = subprocess.Popen(list(cmd), stdout=out_w, stderr=err_w, stdin=source or subprocess.DEVNULL, env=env, cwd=cwd)
    if source is not None:
        source.close()
    os.close(out_w)
    os.close(err_w)
    with os.fdopen(out_r, "rb") as out, os.fdopen(err_r, "rb") as err:
        chunks: dict[str, list[bytes]] = {"out": [], "err": []}
        sel = selectors.DefaultSelector()
        sel.register(out, selectors.EVENT_READ, "out")
        sel.register(err, selectors.EVENT_READ, "err")
        while sel.get_map():
            for key, _ in sel.select():
                data = os.read(key.fd, 1 << 16)
                if data:
                    chunks[key.data].append(data)
                else:
                    sel.unregister(key.fileobj)
        sel.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait on it again
    return ProcessRun(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        peak_rss=usage.ru_maxrss * 1024,  # Linux: KiB
        returncode=proc.returncode,
        stdout=b"".join(chunks["out"]).decode("utf-8", "replace"),
        stderr=b"".join(chunks["err"]).decode("utf-8", "replace"),
    )


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """Median, min and max."""
    return statistics.median(values), min(values), max(values)
