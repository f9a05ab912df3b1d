"""Measuring for the benchmarks: wall time and peak Python memory of runs interleaved round by round."""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Callable, Mapping


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
