#!/usr/bin/env python3
"""Where a `writeback diff` cycle spends its time, by stage: one in-process ``detect`` under cProfile.

    python3 bench/profile_diff.py --kubeconfig K --repo R --path apps [--top 25] [--stages]

Prints the CPU seconds (process time) of the whole cycle, then the cumulative time of each stage of the
pipeline (cProfile inflates Python-heavy code, so read the shares, not the absolute seconds), then the
functions with the most own time. With ``--stages`` it profiles nothing: it prints the CPU seconds of the
process's start and imports, and of each stage of the cycle (as ``bench/replay.py --stages`` counts them).
"""

from __future__ import annotations

import time

_STARTED = time.process_time()  # before the imports below: the process's start

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from writeback.adapters.kube.cluster import KubeCluster  # noqa: E402
from writeback.pipeline.detecting import detect  # noqa: E402
from writeback.pipeline.targets import Edges, TargetSpec  # noqa: E402

_IMPORTED = time.process_time()

# (label, module path suffix, function name): the stages a reader of the engine cares about
STAGES = (
    ("the whole cycle (detect)", "pipeline/detecting.py", "detect"),
    ("Git side: read and parse the manifests", "pipeline/git_side.py", "git_side"),
    ("  of which YAML loading (yamlreading.load_all)", "writeback/yaml/reading.py", "load_all"),
    ("live side: paginated lists", "pipeline/snapshots.py", "snapshot"),
    ("  of which JSON decoding", "json/__init__.py", "loads"),
    ("per object: prepare (normalize, diff, defaults, owners)", "drift/engine.py", "prepare_object"),
    ("  normalize (both sides)", "drift/normalizing.py", "normalize"),
    ("  diff", "drift/diffing.py", "diff"),
    ("  managedFields parse", "drift/ownership.py", "parse_managed_fields"),
    ("  defaults table lookups", "drift/deciding.py", "table_default"),
    ("needs_dry_run", "drift/engine.py", "needs_dry_run"),
    ("dry-run requests", "adapters/kube/cluster.py", "dry_run_apply"),
    ("decide and report (compute_drift)", "drift/engine.py", "compute_drift"),
    ("  decide", "drift/deciding.py", "decide"),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--path", default=".")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--stages", action="store_true", help="CPU seconds per stage of the unprofiled cycle")
    args = ap.parse_args()
    spent: dict[str, float] | None = None
    if args.stages:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from replay import time_stages

        spent = time_stages()
        print(f"process start and imports: {_IMPORTED:.2f} s CPU (of which before writeback's: {_STARTED:.2f})")
    cluster = KubeCluster.connect(kubeconfig=args.kubeconfig)
    spec, edges = TargetSpec(name="profile", path=args.path), Edges(cluster=cluster)
    t0, c0 = time.perf_counter(), time.process_time()
    detection = detect(spec=spec, repo=args.repo, edges=edges)  # unprofiled: the real figure
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"{len(detection.live)} live objects, {len(detection.report.drifts)} drifts: {wall:.2f} s wall, {cpu:.2f} s CPU"
    )
    if spent is not None:
        print("stages (CPU s): " + ", ".join(f"{k} {v:.2f}" for k, v in spent.items()))
        return 0
    from writeback.yaml import reading as yamlreading

    yamlreading.clear_cache()  # the profiled run parses the repo again, as a first cycle does
    prof = cProfile.Profile()
    prof.enable()
    detect(spec=spec, repo=args.repo, edges=edges)
    prof.disable()
    stats = pstats.Stats(prof)
    entries = stats.stats  # type: ignore[attr-defined]
    total = next(v[3] for (f, _, n), v in entries.items() if f.endswith("pipeline/detecting.py") and n == "detect")
    print(f"\n{'stage (cProfile cumulative)':58} {'s':>8} {'share':>6}")
    for label, suffix, name in STAGES:
        cum = sum(v[3] for (f, _, n), v in entries.items() if f.endswith(suffix) and n == name)
        print(f"{label:58} {cum:8.2f} {cum / total:6.1%}")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
    print("\n" + out.getvalue().split("\n", 4)[-1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
