#!/usr/bin/env python3
"""The inputs of docs/scale.md's cost model: one in-process ``writeback diff`` cycle, split by stage, with the
resident memory after each stage and the counts a per-object model needs.

    python3 bench/scale_model.py --kubeconfig K --repo R --path apps [--json out.json]

Prints (and with ``--json`` writes) the CPU seconds (process time) of: the process's start and imports, the Git
side (``git_side``, as ``detecting`` calls it: read and parse the manifests), the live side (``snapshot``: the
paginated lists, of which the HTTP reads and ``json.loads`` of the list bodies, and the objects settled by their
managers as their pages arrive: ``settle_first``, counted as ``prepare_settled``), the settle stage's ``git log``
(``revisions.change_times``), ``prepare_object`` of the other objects (normalize, diff, managedFields),
``needs_dry_run``, the dry-run requests and ``compute_drift``; the resident set (``/proc/self/statm``) when each
stage first ends and the peak (``ru_maxrss``); the numbers of live objects, Git objects, settled objects, list
pages and their bytes, dry-runs and drifts. Stages are wrapped by name where they exist, so the script keeps
working while the pipeline's functions move (a stage it cannot find is reported as absent, not guessed).
Only the whole process's peak RSS and CPU from ``bench_scale.py`` are the benchmark; this is the split.
"""

from __future__ import annotations

import time

_STARTED = time.process_time()

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from writeback.adapters.kube.cluster import KubeCluster  # noqa: E402
from writeback.pipeline.detecting import detect  # noqa: E402
from writeback.pipeline.targets import Edges, TargetSpec  # noqa: E402

_IMPORTED = time.process_time()
_PAGE = os.sysconf("SC_PAGE_SIZE")

# (module, function) -> stage name; wrapped where the module has the function
_STAGES = {
    ("writeback.pipeline.detecting", "git_side"): "git_side",
    ("writeback.pipeline.snapshots", "snapshot"): "snapshot",
    ("writeback.adapters.git.revisions", "change_times"): "settle_context",  # the settle stage's git log
    ("writeback.pipeline.dryruns", "needs_dry_run"): "needs_dry_run",
    ("writeback.pipeline.detecting", "compute_drift"): "compute_drift",
}


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE / 2**20


class Split:
    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.rss_after: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def add(self, name: str, seconds: float) -> None:
        self.cpu[name] = self.cpu.get(name, 0.0) + seconds

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*a: Any, **kw: Any) -> Any:
            c0 = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                self.add(name, time.process_time() - c0)
                self.rss_after.setdefault(name, rss_mib())

        return wrapper

    def install(self) -> list[str]:
        absent = []
        for (module_name, fn_name), stage in _STAGES.items():
            module = importlib.import_module(module_name)
            if hasattr(module, fn_name):
                setattr(module, fn_name, self.timed(stage, getattr(module, fn_name)))
            else:
                absent.append(f"{module_name}.{fn_name}")
        detecting = importlib.import_module("writeback.pipeline.dryruns")
        if hasattr(detecting, "prepare_object"):
            prepare = getattr(detecting, "prepare_object")  # noqa: B009 (imported there, not re-exported)

            def prepare_split(*a: Any, **kw: Any) -> Any:
                c0 = time.process_time()
                prep = prepare(*a, **kw)
                by = "prepare_settled" if getattr(prep, "by_managers", False) else "prepare_other"
                self.add(by, time.process_time() - c0)
                self.count(by)
                return prep

            setattr(detecting, "prepare_object", prepare_split)  # noqa: B010
        else:
            absent.append("writeback.pipeline.dryruns.prepare_object")
        pages = importlib.import_module("writeback.pipeline.settled")
        if hasattr(pages, "settle_first"):  # one-shot runs settle objects as their list pages arrive
            first = getattr(pages, "settle_first")  # noqa: B009 (imported there, not re-exported)

            def settle_counted(*a: Any, **kw: Any) -> Any:
                c0 = time.process_time()
                prep = first(*a, **kw)
                # inside `snapshot`'s time already: its own key, which the model's stage sum leaves out
                self.add("settle_in_snapshot", time.process_time() - c0)
                if prep is not None:
                    self.count("prepare_settled")
                return prep

            setattr(pages, "settle_first", settle_counted)  # noqa: B010
        else:
            absent.append("writeback.pipeline.settled.settle_first")
        send, request = KubeCluster._send, KubeCluster._request

        def counted_send(this: Any, **kw: Any) -> Any:
            got = send(this, **kw)
            if kw.get("method") == "GET" and any(k == "limit" for k, _ in kw.get("query") or []):
                self.count("list_pages")
                self.count("list_bytes", len(got[1]))
            return got

        def timed_request(this: Any, **kw: Any) -> Any:
            c0 = time.process_time()
            try:
                return request(this, **kw)
            finally:
                spent = time.process_time() - c0
                if kw.get("method") == "GET" and any(k == "limit" for k, _ in kw.get("query") or []):
                    self.add("list_requests_and_json", spent)
                elif ("dryRun", "All") in (kw.get("query") or []):
                    self.add("dry_run_requests", spent)
                    self.count("dry_runs")

        KubeCluster._send = counted_send  # type: ignore[method-assign,assignment]
        KubeCluster._request = timed_request  # type: ignore[method-assign,assignment]
        return absent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--path", default=".")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from writeback.yaml import reading

    reading.set_cache(enabled=False)  # as the one-shot `writeback diff` reads: nothing parsed kept beyond its use
    split = Split()
    absent = split.install()
    rss_imported = rss_mib()
    cluster = KubeCluster.connect(kubeconfig=args.kubeconfig)
    spec, edges = TargetSpec(name="model", path=args.path), Edges(cluster=cluster)
    c0 = time.process_time()
    detection = detect(spec=spec, repo=args.repo, edges=edges)
    cycle = time.process_time() - c0
    out: dict[str, Any] = {
        "live": len(detection.live),
        "desired": len(detection.desired),
        "drifts": len(detection.report.drifts),
        "start_cpu": _STARTED,
        "imports_cpu": _IMPORTED - _STARTED,
        "cycle_cpu": cycle,
        "stages_cpu": {k: round(v, 3) for k, v in split.cpu.items()},
        "counts": split.counts,
        "rss_imported_mib": round(rss_imported, 1),
        "rss_after_mib": {k: round(v, 1) for k, v in split.rss_after.items()},
        "rss_end_mib": round(rss_mib(), 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "absent": absent,
    }
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
