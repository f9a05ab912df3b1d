#!/usr/bin/env python3
"""Benchmark: writeback's normalizer against kubectl-neat on the same `kubectl get -o json` List, whole processes.

kubectl-neat is built from the Go module proxy by bench/neat/build (cached outside the repo; benchmark only,
never CI). The List is N objects from the scale world (scale_cluster.py) in a fresh real control plane, dumped
with ``kubectl get -o json --show-managed-fields``. Both read it on stdin and print the cleaned List; they run
interleaved, round by round. Then a table: the fields each one removes that the other keeps, by kind and path
(list positions as ``[*]``), with how many objects.

    python3 bench/bench_neat.py --objects 10000 --rounds 3 [--list dump.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # `tests.controlplane`
sys.path.insert(0, str(HERE))

from measuring import ProcessRun, bytecode_note, run_process, spread  # noqa: E402
from scale_cluster import load_cluster, plan_world  # noqa: E402

_IDENTITY = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}


def build_neat() -> Path:
    done = subprocess.run([str(HERE / "neat" / "build")], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr.strip())
    return Path(done.stdout.strip())


def dump_world(objects: int, *, workdir: Path, out: Path) -> None:
    from tests.controlplane import cp

    plane = cp.start(workdir=workdir / "cp")
    try:
        world = plan_world(objects, namespace_prefix="neat")
        load_cluster(world, kubeconfig=plane.kubeconfig, kubectl=plane.bin_dir / "kubectl", workdir=workdir)
        got = plane.kubectl("get", "deployments,configmaps,services", "-A", "-l", "app.kubernetes.io/name",
                            "-o", "json", "--show-managed-fields", timeout=600)  # fmt: skip
        doc = json.loads(got.stdout)
        if len(doc["items"]) != world.objects:
            raise SystemExit(f"dumped {len(doc['items'])} objects, expected {world.objects}")
        out.write_text(json.dumps(doc))
    finally:
        plane.stop()


def removed(before: Any, after: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths present in ``before`` and gone (or changed) in ``after``, as high up as possible."""
    if isinstance(before, dict):
        if not isinstance(after, dict):
            return [path]
        out: list[tuple[str, ...]] = []
        for k, v in before.items():
            out += [(*path, k)] if k not in after else removed(v, after[k], (*path, k))
        return out
    if isinstance(before, list):
        if not isinstance(after, list) or len(after) != len(before):
            return [path]
        return [p for b, a in zip(before, after, strict=True) for p in removed(b, a, (*path, "[*]"))]
    return [] if before == after else [path]


def fmt(path: tuple[str, ...]) -> str:
    out = ""
    for seg in path:
        if seg == "[*]":
            out += "[*]"
        elif "." in seg or "/" in seg:
            out += f'["{seg}"]'
        else:
            out += ("." if out else "") + seg
    return out


def compare(original: Path, neat_out: str, ours_out: str) -> dict[str, Counter[tuple[str, str]]]:
    items = json.loads(original.read_text())["items"]
    neat_items, our_items = json.loads(neat_out)["items"], json.loads(ours_out)["items"]
    only_neat: Counter[tuple[str, str]] = Counter()
    only_ours: Counter[tuple[str, str]] = Counter()
    for item, n, o in zip(items, neat_items, our_items, strict=True):
        by_neat = {p for p in removed(item, n) if p not in _IDENTITY}
        by_ours = {p for p in removed(item, o) if p not in _IDENTITY}
        for p in by_neat - by_ours:
            if not any(p[:i] in by_ours for i in range(1, len(p))):
                only_neat[(item["kind"], fmt(p))] += 1
        for p in by_ours - by_neat:
            if not any(p[:i] in by_neat for i in range(1, len(p))):
                only_ours[(item["kind"], fmt(p))] += 1
    return {
        "removed by kubectl-neat, kept by writeback": only_neat,
        "removed by writeback, kept by kubectl-neat": only_ours,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--list", type=Path, help="a `kubectl get -o json` List to use instead of a fresh dump")
    args = ap.parse_args()
    neat = build_neat()
    with tempfile.TemporaryDirectory(prefix="writeback-neat-") as tmp:
        dump = args.list or Path(tmp) / "list.json"
        if args.list is None:
            dump_world(args.objects, workdir=Path(tmp), out=dump)
        runs = {"kubectl-neat": [str(neat)], "writeback normalize": [sys.executable, str(HERE / "neat_writeback.py")]}
        rows: dict[str, list[ProcessRun]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, cmd in runs.items():
                run = run_process(cmd, stdin=str(dump))
                if run.returncode != 0:
                    raise SystemExit(f"{name} exited {run.returncode}: {run.stderr[-2000:]}")
                rows[name].append(run)
        count = len(json.loads(dump.read_text())["items"])
        print(bytecode_note())
        print(f"{count} objects in one List ({dump.stat().st_size / 2**20:.1f} MiB), {args.rounds} rounds interleaved")
        base = spread([r.wall for r in rows["kubectl-neat"]])[0]
        for name, rs in rows.items():
            w, c = spread([r.wall for r in rs]), spread([r.cpu for r in rs])
            m = spread([r.peak_rss / 2**20 for r in rs])
            print(f"{name:22} wall {w[0]:7.2f} s ({w[1]:.2f}-{w[2]:.2f}) ratio {w[0] / base:5.2f}  "
                  f"CPU {c[0]:7.2f} s ({c[1]:.2f}-{c[2]:.2f})  peak {m[0]:6.0f} MiB")  # fmt: skip
        tables = compare(dump, rows["kubectl-neat"][-1].stdout, rows["writeback normalize"][-1].stdout)
    for title, counts in tables.items():
        print(f"\n{title}:\n| kind | field | objects |\n| --- | --- | --- |")
        for (kind, path), n in sorted(counts.items()):
            print(f"| {kind} | `{path}` | {n} |")
        if not counts:
            print("| (none) | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
