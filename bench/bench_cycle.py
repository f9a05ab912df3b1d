#!/usr/bin/env python3
"""Benchmark: one `writeback diff` cycle against a bare paginated list of the same objects.

Both run side by side, interleaved, on the same real kube-apiserver (tests/controlplane), so the machine's noise
hits both alike. The figure that matters is the ratio cycle / bare list (time and peak Python memory).

    python3 bench/bench_cycle.py --objects 200 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tests.controlplane`

from measuring import interleaved, print_table  # noqa: E402

from tests.controlplane import cp  # noqa: E402
from writeback.adapters.kube.cluster import KubeCluster  # noqa: E402
from writeback.pipeline.detecting import detect  # noqa: E402
from writeback.pipeline.targets import Edges, TargetSpec  # noqa: E402

NS = "bench"


def manifests(count: int) -> str:
    docs = []
    for i in range(count):
        docs.append(
            f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: {NS}
  labels: {{app: app-{i}}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: app-{i}}}
  template:
    metadata:
      labels: {{app: app-{i}}}
    spec:
      containers:
        - name: app
          image: registry.example.com/app:{i}.0.0
          env:
            - name: LOG_LEVEL
              value: info
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: conf-{i}
  namespace: {NS}
data:
  setting: "value-{i}"
"""
        )
    return "---\n".join(docs)


def bare_list(api_client: Any, page_size: int) -> int:
    """The baseline: a paginated raw list of each kind, JSON-decoded, nothing else."""
    from kubernetes import client

    seen = 0
    apps, core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)
    calls: tuple[Callable[..., Any], ...] = (apps.list_namespaced_deployment, core.list_namespaced_config_map)
    for fn in calls:  # with _preload_content=False each answers the raw HTTP response
        cont = None
        while True:
            resp = fn(NS, limit=page_size, _continue=cont, _preload_content=False)
            doc = json.loads(resp.data)
            seen += len(doc["items"])
            cont = doc["metadata"].get("continue")
            if not cont:
                break
    return seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=200, help="Deployments (and as many ConfigMaps)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--page-size", type=int, default=500)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="writeback-bench-") as tmp:
        repo = Path(tmp) / "repo"
        (repo / "apps").mkdir(parents=True)
        text = manifests(args.objects)
        (repo / "apps" / "all.yaml").write_text(text)
        git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "manifests"], check=True)

        plane = cp.start(workdir=Path(tmp) / "cp")
        try:
            plane.kubectl("create", "namespace", NS)
            plane.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-f", "-", input=text)
            # A few people's edits, so the cycle has real drift to decide (and dry-runs to make).
            for i in range(0, args.objects, max(1, args.objects // 10)):
                plane.kubectl("set", "env", f"deployment/app-{i}", "-n", NS, "HOTFIX=1")
            cluster = KubeCluster(api_client=plane.api_client)
            spec = TargetSpec(name="bench", path="apps", page_size=args.page_size)
            edges = Edges(cluster=cluster)

            def cycle() -> None:
                detection = detect(spec=spec, repo=repo, edges=edges)
                assert detection.report.drifts, "the benchmark expects drift"

            def baseline() -> None:
                assert bare_list(plane.api_client, args.page_size) == 2 * args.objects

            cycle()  # warm discovery caches and imports on both sides
            baseline()
            rows = interleaved({"bare list": baseline, "writeback diff cycle": cycle}, rounds=args.rounds)
        finally:
            plane.stop()

    print(f"objects: {2 * args.objects} (Deployments + ConfigMaps), rounds: {args.rounds}, interleaved")
    print_table(rows, baseline="bare list", width=24)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
