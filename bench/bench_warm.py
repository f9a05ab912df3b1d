#!/usr/bin/env python3
"""The service's warm cycle (issue 13): zero list calls, its time against the floor, Git parsed only on change.

The service keeps one ``WatchingCluster`` per target (informers: one list per kind and namespace when it starts,
then watch events) and runs ``plan_target`` over its clone every cycle. This benchmark does the same in one
process against the scale world of ``bench_scale.py`` (``scale_cluster.py``): a first cycle (cold: the informers
list, the Git files are parsed), then ``--rounds`` warm cycles, each interleaved with one run of the floor
process (``scale_floor.py``: a bare paginated list plus a C-based parse of the repo, what a tool without a cache
must do at least), and the same floor in this process (without Python's start and imports).

For each warm cycle: CPU seconds (``time.process_time``: every thread of the process, the informers' watch
threads included) and wall, the API requests it made (the apiserver's ``apiserver_request_total`` before and
after, as bench_scale.py reads it), and how many YAML texts it parsed (``yamlreading.cache_info`` misses).

    python3 bench/bench_warm.py --objects 1000 --rounds 3
    python3 bench/bench_warm.py --kubeconfig K --world DIR --prefix scale --objects 10000   # a loaded world

With ``--kubeconfig``/``--world`` the world is already loaded (``DIR/repo`` holds its repo, ``--prefix`` its
namespaces); otherwise a fresh control plane is started and loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # `tests.controlplane`
sys.path.insert(0, str(HERE))

from bench_scale import floor_cmd, request_delta, scrape  # noqa: E402
from measuring import run_process, spread  # noqa: E402
from scale_cluster import World, api_client, load_cluster, plan_world, write_repo  # noqa: E402
from scale_floor import bare_list, parse_repo  # noqa: E402


def _lists(requests: Counter[str]) -> int:
    return sum(n for what, n in requests.items() if what.startswith("LIST "))


def measure_warm(*, world: World, kubeconfig: str, repo: Path, rounds: int) -> dict[str, Any]:
    from writeback.adapters.kube.cluster import KubeCluster
    from writeback.adapters.kube.kubeconfigs import ClusterAccess, new_api_client
    from writeback.adapters.kube.watching import WatchingCluster
    from writeback.pipeline.planning import plan_target
    from writeback.pipeline.targets import Edges, TargetSpec
    from writeback.yaml import reading as yamlreading

    client = new_api_client(access=ClusterAccess(kubeconfig=kubeconfig))
    watching = WatchingCluster(cluster=KubeCluster(api_client=client), api_client=client)
    spec, edges = TargetSpec(name="warm", path="apps"), Edges(cluster=watching)
    metrics = api_client(kubeconfig)
    floor_api = api_client(kubeconfig)
    out: dict[str, Any] = {"objects": world.objects, "rounds": rounds, "warm": [], "floor": [], "floor_in_process": []}

    def cycle() -> dict[str, Any]:
        before, parsed = scrape(metrics), yamlreading.cache_info().misses
        t0, c0 = time.perf_counter(), time.process_time()
        outcome = plan_target(spec=spec, repo=repo, edges=edges)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        requests = request_delta(before, scrape(metrics))
        assert outcome.detection is not None
        written = sum(1 for d in outcome.detection.report.drifts if d.decision.value == "writeback")
        return {"cpu": cpu, "wall": wall, "requests": dict(requests), "lists": _lists(requests),
                "parsed_texts": yamlreading.cache_info().misses - parsed, "writeback_drifts": written,
                "edited_files": sum(len(cs.files) for cs in outcome.plan.changesets)}  # fmt: skip

    try:
        out["cold"] = cycle()
        print(f"cold cycle: {out['cold']['cpu']:.2f} s CPU, {out['cold']['lists']} lists", file=sys.stderr)
        cmd = floor_cmd(kubeconfig=kubeconfig, world=world, repo=repo)
        for r in range(rounds):
            warm = cycle()
            out["warm"].append(warm)
            run = run_process(cmd)
            if run.returncode != 0 or json.loads(run.stdout)["listed"] != world.objects:
                raise RuntimeError(f"the floor failed or listed the wrong count:\n{run.stdout}{run.stderr[-2000:]}")
            out["floor"].append({"cpu": run.cpu, "wall": run.wall})
            t0, c0 = time.perf_counter(), time.process_time()
            listed = bare_list(floor_api, namespaces=list(world.namespaces), page_size=500)
            parse_repo(repo / "apps")
            out["floor_in_process"].append({"cpu": time.process_time() - c0, "wall": time.perf_counter() - t0})
            if listed != world.objects:
                raise RuntimeError(f"the in-process floor listed {listed} objects, expected {world.objects}")
            print(f"round {r + 1}: warm {warm['cpu']:.2f} s CPU ({warm['lists']} lists, {warm['parsed_texts']} "
                  f"parsed), floor {run.cpu:.2f} s CPU", file=sys.stderr)  # fmt: skip
    finally:
        watching.stop()
        metrics.close()
        floor_api.close()
    return out


def summarize(out: dict[str, Any]) -> dict[str, Any]:
    def med(rows: list[dict[str, Any]], key: str) -> tuple[float, float, float]:
        return spread([r[key] for r in rows])

    warm, floor, inproc = out["warm"], out["floor"], out["floor_in_process"]
    s = {
        "objects": out["objects"],
        "rounds": out["rounds"],
        "cold": {k: out["cold"][k] for k in ("cpu", "wall", "lists", "parsed_texts")},
        "warm_cpu": med(warm, "cpu"),
        "warm_wall": med(warm, "wall"),
        "floor_cpu": med(floor, "cpu"),
        "floor_wall": med(floor, "wall"),
        "floor_in_process_cpu": med(inproc, "cpu"),
        "floor_in_process_wall": med(inproc, "wall"),
        "warm_lists": [w["lists"] for w in warm],
        "warm_parsed_texts": [w["parsed_texts"] for w in warm],
        "warm_requests": warm[-1]["requests"],
        "writeback_drifts": [w["writeback_drifts"] for w in warm],
        "edited_files": [w["edited_files"] for w in warm],
    }
    s["cpu_ratio"] = s["warm_cpu"][0] / s["floor_cpu"][0]
    s["cpu_ratio_in_process"] = s["warm_cpu"][0] / s["floor_in_process_cpu"][0]
    s["wall_ratio"] = statistics.median(w["wall"] for w in warm) / s["floor_wall"][0]
    return s


def print_summary(s: dict[str, Any]) -> None:
    def f(t: tuple[float, float, float]) -> str:
        return f"{t[0]:.2f} ({t[1]:.2f}-{t[2]:.2f})"

    print(f"\n{s['objects']} objects, {s['rounds']} warm cycles, each followed by the floor (process, then in process)")
    print(f"cold cycle:            {s['cold']['cpu']:.2f} s CPU, {s['cold']['lists']} lists, "
          f"{s['cold']['parsed_texts']} YAML texts parsed")  # fmt: skip
    print(f"warm cycle:            CPU {f(s['warm_cpu'])}  wall {f(s['warm_wall'])}")
    print(f"floor (process):       CPU {f(s['floor_cpu'])}  wall {f(s['floor_wall'])}")
    print(f"floor (in process):    CPU {f(s['floor_in_process_cpu'])}  wall {f(s['floor_in_process_wall'])}")
    print(f"ratio warm/floor:      CPU {s['cpu_ratio']:.2f} (in process {s['cpu_ratio_in_process']:.2f}), "
          f"wall {s['wall_ratio']:.2f}")  # fmt: skip
    print(f"warm list calls:       {s['warm_lists']}; YAML texts parsed: {s['warm_parsed_texts']}")
    print(f"warm API requests:     {s['warm_requests']}")
    print(f"written back / edited: {s['writeback_drifts']} / {s['edited_files']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kubeconfig", help="a control plane with the world loaded already (with --world)")
    ap.add_argument("--world", type=Path, help="the loaded world's directory (its repo in DIR/repo)")
    ap.add_argument("--prefix", default="scale", help="the loaded world's namespace prefix")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    world = plan_world(args.objects, namespace_prefix=args.prefix)
    if args.kubeconfig:
        if args.world is None:
            ap.error("--kubeconfig needs --world")
        out = measure_warm(world=world, kubeconfig=args.kubeconfig, repo=args.world / "repo", rounds=args.rounds)
    else:
        from tests.controlplane import cp

        with tempfile.TemporaryDirectory(prefix="writeback-warm-") as tmp:
            plane = cp.start(workdir=Path(tmp) / "cp")
            repo, kubeconfig = Path(tmp) / "repo", plane.kubeconfig
            try:
                write_repo(world, repo)
                print(f"{world.objects} objects: loading the control plane", file=sys.stderr)
                load_cluster(world, kubeconfig=kubeconfig, kubectl=plane.bin_dir / "kubectl", workdir=Path(tmp))
                out = measure_warm(world=world, kubeconfig=kubeconfig, repo=repo, rounds=args.rounds)
            finally:
                plane.stop()
    s = summarize(out)
    print_summary(s)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    if args.json:
        args.json.write_text(json.dumps({"summary": s, "runs": out}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
