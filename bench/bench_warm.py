#!/usr/bin/env python3
"""The service's warm cycle (issue 13): zero list calls, its time against a bare list, Git parsed only on change.

The service keeps one ``WatchingCluster`` per target (informers: one list per kind and namespace when it starts,
then watch events) and runs ``plan_target`` over its clone every cycle. This benchmark does the same in one
process against a scale world of ``bench_scale.py`` (``--world-kind``, worlds.py): a first cycle (cold: the
informers list, the Git files are parsed), then ``--rounds`` warm cycles, each interleaved with the baseline: a
bare paginated list of the world's kinds and namespaces, nothing else (a warm cycle parses no YAML, so the fair
baseline parses none either; issue 23): ``scale_floor.py --list-only`` as a process of its own (started by
measuring.run_process), which reports the CPU of its list alone, without Python's start and imports, as a warm
cycle pays none: **that is the ratio to compare**; its whole process's CPU is printed too. The same bare list also
runs in this process (``scale_floor.bare_list``), for reference only: there the collector walks the service's
cache too, which makes the list dearer than it is alone.

With ``--churn 0.01``, 1% of the objects change before each warm cycle (the HPA scales that many Deployments:
churning.py), outside the measured time, and the cycle must see them; without it nothing changes between cycles.

For each warm cycle: CPU seconds (``time.process_time``: every thread of the process, the informers' watch
threads included) and wall, the API requests it made (the apiserver's ``apiserver_request_total`` before and
after, as bench_scale.py reads it), and how many YAML texts it parsed (``yamlreading.cache_info`` misses). At the
end, this process's resident memory (``VmRSS``, ``VmHWM``): the service's cache and the harness together.

    python3 bench/bench_warm.py --objects 1000 --rounds 3
    python3 bench/bench_warm.py --kubeconfig K --world DIR --prefix scale --objects 10000   # a loaded world

With ``--kubeconfig``/``--world`` the world is already loaded (``DIR/repo`` holds its repo, ``--prefix`` its
namespaces); otherwise a fresh control plane is started and loaded. With ``PYTHONDONTWRITEBYTECODE`` set, the
imports come from a bytecode cache (measuring.use_bytecode_cache), and the output says so.
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

from bench_scale import check_floor, floor_cmd, request_delta, scrape  # noqa: E402
from churning import churn, churn_targets, replicas_for, seen_in, wait_seen  # noqa: E402
from measuring import bytecode_note, run_process, spread, use_bytecode_cache  # noqa: E402
from scale_cluster import api_client  # noqa: E402
from scale_floor import bare_list, parse_resources  # noqa: E402
from worlds import WORLD_KINDS, BenchWorld, make_world  # noqa: E402


def _lists(requests: Counter[str]) -> int:
    return sum(n for what, n in requests.items() if what.startswith("LIST "))


def _memory() -> dict[str, int]:
    """This process's VmRSS and VmHWM, in bytes."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def measure_warm(
    *, world: BenchWorld, kubeconfig: str, repo: Path, rounds: int, churn_fraction: float = 0.0, no_memo: bool = False
) -> dict[str, Any]:
    """One cold cycle, then ``rounds`` warm cycles each followed by the bare list; with ``churn_fraction``, that
    fraction of the objects changes before each warm cycle (churning.py), outside the measured time."""
    from writeback.adapters.kube.cluster import KubeCluster
    from writeback.adapters.kube.kubeconfigs import ClusterAccess, new_api_client
    from writeback.adapters.kube.watching import WatchingCluster
    from writeback.pipeline.planning import plan_target
    from writeback.pipeline.targets import Edges, TargetSpec
    from writeback.pipeline.warming import WarmState
    from writeback.yaml import reading as yamlreading

    client = new_api_client(access=ClusterAccess(kubeconfig=kubeconfig))
    watching = WatchingCluster(cluster=KubeCluster(api_client=client), api_client=client)
    memo = None if no_memo else WarmState()  # the service keeps one per target (pipeline.warming)
    spec, edges = TargetSpec(name="warm", path="apps"), Edges(cluster=watching, memo=memo)
    metrics = api_client(kubeconfig)
    floor_api = api_client(kubeconfig)
    resources = parse_resources(",".join(world.resources))
    out: dict[str, Any] = {"objects": world.objects, "rounds": rounds, "warm": [], "floor": [], "floor_in_process": []}
    targets = churn_targets(world.scaled, objects=world.objects, fraction=churn_fraction)
    out["churned"] = len(targets)

    def cycle(replicas: int = 0) -> dict[str, Any]:
        before, parsed = scrape(metrics), yamlreading.cache_info().misses
        t0, c0 = time.perf_counter(), time.process_time()
        outcome = plan_target(spec=spec, repo=repo, edges=edges)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        requests = request_delta(before, scrape(metrics))
        assert outcome.detection is not None
        drifts = outcome.detection.report.drifts
        written = sum(1 for d in drifts if d.decision.value == "writeback")
        decided = {(d.resource.kind, d.resource.namespace, d.resource.name, d.decision.value)
                   for d in drifts if d.decision.value != "ignore"}  # fmt: skip
        if decided != world.expected_decisions():  # exactly the people's edits, each with its decision
            raise RuntimeError(f"decided {sorted(decided ^ world.expected_decisions())} unexpectedly or not")
        return {"cpu": cpu, "wall": wall, "requests": dict(requests), "lists": _lists(requests),
                "parsed_texts": yamlreading.cache_info().misses - parsed, "writeback_drifts": written,
                "decided_objects": len(decided),
                "churn_seen": seen_in(outcome.detection.live, targets, replicas=replicas) if targets else 0,
                "recomputed": memo.recomputed if memo is not None else None,
                "dry_runs": sum(n for what, n in requests.items() if what.startswith(("POST ", "PATCH "))),
                "edited_files": sum(len(cs.files) for cs in outcome.plan.changesets)}  # fmt: skip

    try:
        out["cold"] = cycle()
        print(f"cold cycle: {out['cold']['cpu']:.2f} s CPU, {out['cold']['lists']} lists", file=sys.stderr)
        cmd = floor_cmd(kubeconfig=kubeconfig, world=world, repo=repo, list_only=True)
        first = run_process(cmd)  # unmeasured: fills the bytecode cache, if one is used
        if first.returncode != 0:
            raise RuntimeError(f"the bare list failed:\n{first.stderr[-2000:]}")
        bare_list(floor_api, namespaces=world.namespaces, page_size=500, resources=resources)  # its connections
        for r in range(rounds):
            if targets:  # outside the measured time: the change, and the informers' delivery of it
                wait_seen(watching.informers, churn(metrics, targets, replicas=replicas_for(r)))
            out.setdefault("load", []).append(os.getloadavg()[0])
            warm = cycle(replicas_for(r))
            out["warm"].append(warm)
            t0, c0 = time.perf_counter(), time.process_time()
            listed = bare_list(floor_api, namespaces=world.namespaces, page_size=500, resources=resources)
            out["floor_in_process"].append({"cpu": time.process_time() - c0, "wall": time.perf_counter() - t0})
            if listed != world.objects:
                raise RuntimeError(f"the in-process bare list listed {listed} objects, expected {world.objects}")
            run = run_process(cmd)
            if run.returncode != 0:
                raise RuntimeError(f"the bare list failed:\n{run.stderr[-2000:]}")
            check_floor("the bare list", world, run)
            own = json.loads(run.stdout)
            out["floor"].append({"cpu": run.cpu, "wall": run.wall, "peak_rss": run.peak_rss,
                                 "list_cpu": own["list_cpu"], "list_wall": own["list_wall"]})  # fmt: skip
            print(f"round {r + 1}: warm {warm['cpu']:.2f} s CPU ({warm['lists']} lists, {warm['parsed_texts']} "
                  f"parsed), bare list {own['list_cpu']:.2f} s CPU alone ({run.cpu:.2f} s its process, "
                  f"{out['floor_in_process'][-1]['cpu']:.2f} s in this one)", file=sys.stderr)  # fmt: skip
        out["memory"] = _memory()
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
        "list_cpu": med(floor, "list_cpu"),
        "list_wall": med(floor, "list_wall"),
        "floor_in_process_cpu": med(inproc, "cpu"),
        "floor_in_process_wall": med(inproc, "wall"),
        "warm_lists": [w["lists"] for w in warm],
        "warm_parsed_texts": [w["parsed_texts"] for w in warm],
        "warm_recomputed": [w["recomputed"] for w in warm],
        "warm_dry_runs": [w["dry_runs"] for w in warm],
        "warm_requests": warm[-1]["requests"],
        "writeback_drifts": [w["writeback_drifts"] for w in warm],
        "churned": out.get("churned", 0),
        "churn_seen": [w["churn_seen"] for w in warm],
        "decided_objects": [w["decided_objects"] for w in warm],
        "edited_files": [w["edited_files"] for w in warm],
        "floor_peak_rss_mib": spread([f["peak_rss"] / 2**20 for f in floor]),
        "memory_mib": {k: v / 2**20 for k, v in out.get("memory", {}).items()},
        "load_average": spread(out["load"]),
    }
    s["cpu_ratio_list"] = s["warm_cpu"][0] / s["list_cpu"][0]
    s["cpu_ratio"] = s["warm_cpu"][0] / s["floor_cpu"][0]
    s["cpu_ratio_in_process"] = s["warm_cpu"][0] / s["floor_in_process_cpu"][0]
    s["wall_ratio"] = statistics.median(w["wall"] for w in warm) / s["floor_wall"][0]
    return s


def print_summary(s: dict[str, Any]) -> None:
    def f(t: tuple[float, float, float]) -> str:
        return f"{t[0]:.2f} ({t[1]:.2f}-{t[2]:.2f})"

    print(
        f"\n{s['objects']} objects, {s['rounds']} warm cycles, each followed by a bare list (in process, then as a "
        "process)"
    )
    print(f"cold cycle:            {s['cold']['cpu']:.2f} s CPU, {s['cold']['lists']} lists, "
          f"{s['cold']['parsed_texts']} YAML texts parsed")  # fmt: skip
    print(f"warm cycle:            CPU {f(s['warm_cpu'])}  wall {f(s['warm_wall'])}")
    print(f"bare list, alone:      CPU {f(s['list_cpu'])}  wall {f(s['list_wall'])}  (its own process, the list only)")
    print(f"  its whole process:   CPU {f(s['floor_cpu'])}  wall {f(s['floor_wall'])}  "
          f"peak RSS {s['floor_peak_rss_mib'][0]:.0f} MiB")  # fmt: skip
    print(f"  in this process:     CPU {f(s['floor_in_process_cpu'])}  wall {f(s['floor_in_process_wall'])}  "
          "(the collector also walks the service's cache)")  # fmt: skip
    print(f"ratio warm/bare list:  CPU {s['cpu_ratio_list']:.2f} (against its whole process {s['cpu_ratio']:.2f}, "
          f"in this process {s['cpu_ratio_in_process']:.2f}); "
          f"wall {s['wall_ratio']:.2f} against the whole process")  # fmt: skip
    if s["churned"]:
        print(f"changed before each warm cycle: {s['churned']} Deployments scaled (seen by the cycles: "
              f"{s['churn_seen']})")  # fmt: skip
    print(f"warm list calls:       {s['warm_lists']}; YAML texts parsed: {s['warm_parsed_texts']}")
    print(f"warm dry-runs:         {s['warm_dry_runs']}; objects recomputed: {s['warm_recomputed']}")
    print(f"warm API requests:     {s['warm_requests']}")
    print(f"drifts written back / objects decided / files edited: {s['writeback_drifts']} / "
          f"{s['decided_objects']} / {s['edited_files']}")  # fmt: skip
    load = s["load_average"]
    print(f"load average (1 min) before the cycles: median {load[0]:.1f}, {load[1]:.1f}-{load[2]:.1f}")
    mem = s["memory_mib"]
    if mem:
        print(f"this process (service cache + harness): VmRSS {mem['VmRSS']:.0f} MiB, VmHWM {mem['VmHWM']:.0f} MiB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kubeconfig", help="a control plane with the world loaded already (with --world)")
    ap.add_argument("--world", type=Path, help="the loaded world's directory (its repo in DIR/repo)")
    ap.add_argument("--prefix", default="scale", help="the loaded world's namespace prefix")
    ap.add_argument("--world-kind", choices=WORLD_KINDS, default="basic", help="which world (worlds.py)")
    ap.add_argument("--churn", type=float, default=0.0, help="fraction of the objects changed before each warm cycle")
    ap.add_argument("--no-memo", action="store_true", help="keep no results across cycles (before issue 23, section 2)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    use_bytecode_cache()
    print(bytecode_note(), flush=True)
    world = make_world(args.world_kind, args.objects, namespace_prefix=args.prefix)
    if args.kubeconfig:
        if args.world is None:
            ap.error("--kubeconfig needs --world")
        out = measure_warm(
            world=world,
            kubeconfig=args.kubeconfig,
            repo=args.world / "repo",
            rounds=args.rounds,
            churn_fraction=args.churn,
            no_memo=args.no_memo,
        )
    else:
        from tests.controlplane import cp

        with tempfile.TemporaryDirectory(prefix="writeback-warm-") as tmp:
            plane = cp.start(workdir=Path(tmp) / "cp")
            repo, kubeconfig = Path(tmp) / "repo", plane.kubeconfig
            try:
                world.write_repo(repo)
                print(f"{world.objects} objects: loading the control plane", file=sys.stderr)
                world.load(kubeconfig=kubeconfig, kubectl=plane.bin_dir / "kubectl", workdir=Path(tmp))
                out = measure_warm(
                    world=world, kubeconfig=kubeconfig, repo=repo, rounds=args.rounds, churn_fraction=args.churn,
                    no_memo=args.no_memo,
                )  # fmt: skip
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
