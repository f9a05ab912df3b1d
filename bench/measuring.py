"""Measuring for the benchmarks: runs interleaved round by round, in-process or as whole processes.

In-process (``interleaved``): wall time and peak traced Python memory of a call. Whole processes
(``run_process``): wall time, CPU time (user + system, the process and its waited-for children, e.g. git) and
peak resident memory, from ``os.wait4`` in a fresh launcher process (``isolated.py``), so that the peak is the
command's own and not the harness's (a child forked from a 70 MiB harness reports at least 70 MiB).

Bytecode: when ``PYTHONDONTWRITEBYTECODE`` is set (as on the shared machines), every measured Python process
would compile each module it imports from source on every run; ``bytecode_env`` gives such processes a bytecode
cache outside the source trees instead (``PYTHONPYCACHEPREFIX``), and ``use_bytecode_cache`` does the same for
the harness's own later imports. ``bytecode_note`` says which is in effect; every harness prints it.
"""

from __future__ import annotations

import json
import os
import selectors
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = Path(__file__).resolve().with_name("isolated.py")
PYCACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "writeback" / "bench-pycache"


def bytecode_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) for a measured Python process: with ``PYTHONDONTWRITEBYTECODE`` set,
    without it and with ``PYTHONPYCACHEPREFIX`` (kept if set, else ``PYCACHE``), so bytecode is cached once."""
    out = dict(os.environ if env is None else env)
    if out.get("PYTHONDONTWRITEBYTECODE"):
        del out["PYTHONDONTWRITEBYTECODE"]
        out["PYTHONPYCACHEPREFIX"] = out.get("PYTHONPYCACHEPREFIX") or str(PYCACHE)
    return out


def use_bytecode_cache() -> None:
    """The same for this process's later imports (call it before importing what is measured in process)."""
    if sys.dont_write_bytecode:
        sys.dont_write_bytecode = False
        sys.pycache_prefix = sys.pycache_prefix or str(PYCACHE)


def bytecode_note(env: Mapping[str, str] | None = None) -> str:
    """One line for a benchmark's output: where its Python processes read their bytecode from."""
    src = dict(os.environ if env is None else env)
    measured = bytecode_env(src)
    if src.get("PYTHONDONTWRITEBYTECODE"):
        prefix = measured["PYTHONPYCACHEPREFIX"]
        return (f"bytecode: PYTHONDONTWRITEBYTECODE is set here; measured processes run from the bytecode cache "
                f"PYTHONPYCACHEPREFIX={prefix} (filled by the unmeasured first runs)")  # fmt: skip
    if measured.get("PYTHONPYCACHEPREFIX"):
        return f"bytecode: cached in PYTHONPYCACHEPREFIX={measured['PYTHONPYCACHEPREFIX']}"
    return "bytecode: __pycache__ beside the sources (PYTHONDONTWRITEBYTECODE not set)"


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
    """One whole process: wall and CPU seconds, peak RSS (bytes), exit code and output.

    ``launcher_rss``: the launcher's own peak (bytes); ``peak_rss`` is the command's own when it is above that.
    """

    wall: float
    cpu: float
    peak_rss: int
    returncode: int
    stdout: str
    stderr: str
    launcher_rss: int = 0


def run_process(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: str | None = None,
    bytecode_cache: bool = True,
) -> ProcessRun:
    """Run ``cmd`` to completion in a process of its own and measure it.

    A fresh launcher (``isolated.py``, a minimal Python) spawns ``cmd`` and reports its ``os.wait4`` rusage:
    the command's own CPU and peak RSS, not the harness's. ``env`` (default: this process's) goes through
    ``bytecode_env`` unless ``bytecode_cache`` is false (the A/B of what compiling costs). ``stdin``: a file to
    read standard input from.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    source = open(stdin, "rb") if stdin else None  # noqa: SIM115 (closed below, after the child has it)
    launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(res_w), *cmd]
    proc = subprocess.Popen(launcher, stdout=out_w, stderr=err_w, stdin=source or subprocess.DEVNULL,
                            env=bytecode_env(env) if bytecode_cache else dict(os.environ if env is None else env),
                            cwd=cwd, pass_fds=(res_w,))  # fmt: skip
    if source is not None:
        source.close()
    for fd in (out_w, err_w, res_w):
        os.close(fd)
    chunks: dict[str, list[bytes]] = {"out": [], "err": [], "res": []}
    sel = selectors.DefaultSelector()
    for fd, name in ((out_r, "out"), (err_r, "err"), (res_r, "res")):
        sel.register(fd, selectors.EVENT_READ, name)
    while sel.get_map():
        for key, _ in sel.select():
            data = os.read(key.fd, 1 << 16)
            if data:
                chunks[key.data].append(data)
            else:
                sel.unregister(key.fd)
                os.close(key.fd)
    sel.close()
    launched = proc.wait()
    stdout = b"".join(chunks["out"]).decode("utf-8", "replace")
    stderr = b"".join(chunks["err"]).decode("utf-8", "replace")
    if launched != 0 or not chunks["res"]:
        raise RuntimeError(f"the launcher of {list(cmd)} failed (exit {launched}):\n{stderr[-3000:]}")
    res = json.loads(b"".join(chunks["res"]))
    return ProcessRun(
        wall=res["wall"],
        cpu=res["utime"] + res["stime"],
        peak_rss=res["maxrss_kib"] * 1024,  # Linux: KiB
        returncode=res["returncode"],
        stdout=stdout,
        stderr=stderr,
        launcher_rss=res["launcher_kib"] * 1024,
    )


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """Median, min and max."""
    return statistics.median(values), min(values), max(values)
