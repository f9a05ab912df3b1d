#!/usr/bin/env python3
"""Helm renders (issue 21, section 5): how many ``helm template`` runs a plan costs, against the budget.

The cost of the Helm source is its renders. The budget: at most 3 runs per drifted field for loading and tracing
together, plus one verification render per change set (``3 n + 1``; the podinfo scenario with 5 drifted fields:
16), and a warm cycle with no new drift renders nothing.

Each scenario, on a real control plane of its own (tests/controlplane) with the real helm (tests/helm/build): the
real chart (tests/data/charts) rendered by ``helm template`` and applied as ``argocd-controller``, an Argo CD
Application synced at the repo's commit, then a person's changes with the real kubectl. Then, in this process,
what a service cycle runs (``plan_target``, cluster mode) from a cold render cache, and once more warm. It counts
the helm executions of the process's render cache (``writeback.adapters.helm.SHARED.runs``): those before the
locate step (the load: the Git values rendered as the controller does) and after it (tracing and the proof), and
checks every plan: each drifted field written, nothing unresolved, the proof in the change set.

    python3 bench/bench_helm.py                     # prints the table
    python3 bench/bench_helm.py --json out.json     # and writes the figures
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.controlplane import cp  # noqa: E402
from tests.helm.binary import build_helm  # noqa: E402
from tests.support.gitrepos import commit, init_repo  # noqa: E402
from tests.support.testdata import CHARTS, CRDS  # noqa: E402
from writeback.adapters import helm as helm_adapter  # noqa: E402
from writeback.adapters.kube.cluster import KubeCluster  # noqa: E402
from writeback.gitops import argocd  # noqa: E402
from writeback.gitops.base import Followed  # noqa: E402
from writeback.pipeline.planning import plan_target  # noqa: E402
from writeback.pipeline.targets import Edges, TargetSpec  # noqa: E402

PODINFO_IMAGE = "ghcr.io/stefanprodan/podinfo"
NGINX_IMAGE = "docker.io/bitnami/nginx"
ANNOTATE = '{"spec":{"template":{"metadata":{"annotations":{"team":"payments"}}}}}'
# A person's changes, one drifted field each (kubectl arguments after the verb's object and namespace).
PODINFO_CHANGES = (
    ("set", "image", "podinfo=" + PODINFO_IMAGE + ":6.15.0"),
    ("scale", "--replicas=5"),
    ("set", "env", "FEATURE_X=enabled"),
    ("set", "resources", "-c", "podinfo", "--limits=memory=512Mi"),
    ("patch", "-p", ANNOTATE),
)
NGINX_CHANGES = (
    ("scale", "--replicas=4"),
    ("patch", "-p", ANNOTATE),
    ("set", "env", "-c", "nginx", "FOO=bar"),
)


@dataclass(frozen=True, kw_only=True)
class Scenario:
    name: str
    chart: str
    deployment: str
    values: str
    changes: tuple[tuple[str, ...], ...]


@dataclass(kw_only=True)
class Figures:
    scenario: str
    fields: int
    budget: int
    cold_load: int
    cold_locate_and_proof: int
    cold_total: int
    warm_total: int
    cold_seconds: float
    within_budget: bool


def _kubectl(plane: cp.ControlPlane, *args: str, stdin: str | None = None) -> str:
    return str(plane.kubectl(*args, input=stdin).stdout)


def _template(helm: Path, chart: Path, values: Path, namespace: str, home: Path) -> str:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "c"),
        "HELM_CONFIG_HOME": str(home / "f"),
        "HELM_DATA_HOME": str(home / "d"),
        "KUBECONFIG": str(home / "no"),
    }
    args = [
        str(helm),
        "template",
        str(chart),
        "--name-template",
        "web",
        "--namespace",
        namespace,
        "--include-crds",
        "--skip-tests",
        "--values",
        str(values),
    ]
    return subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout


def _world(plane: cp.ControlPlane, helm: Path, work: Path, sc: Scenario, fields: int) -> tuple[Path, str]:
    """A repo and a namespace: the chart applied as argocd-controller, then ``fields`` of the person's changes."""
    namespace = f"{sc.name}-{fields}"
    repo = work / namespace
    repo.mkdir()
    init_repo(repo)
    shutil.copytree(CHARTS / sc.chart, repo / "charts" / sc.chart)
    app = {
        "apiVersion": argocd.API_VERSION, "kind": "Application", "metadata": {"name": "web", "namespace": namespace},
        "spec": {"project": "default", "destination": {"namespace": namespace},
                 "source": {"repoURL": "https://git.example/platform.git", "path": f"charts/{sc.chart}",
                            "helm": {"valueFiles": ["../../envs/prod/values.yaml"]}}},
    }  # fmt: skip
    sha = commit(repo, "platform", files={"envs/prod/values.yaml": sc.values, "apps/web.yaml": json.dumps(app)})
    _kubectl(plane, "create", "namespace", namespace)
    rendered = _template(helm, repo / "charts" / sc.chart, repo / "envs/prod/values.yaml", namespace, work / "home")
    _kubectl(plane, "apply", "--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", "-",
             stdin=rendered)  # fmt: skip
    app["status"] = {"sync": {"status": "Synced", "revision": sha}}
    _kubectl(plane, "apply", "--server-side", "--field-manager=argocd-controller", "-f", "-", stdin=json.dumps(app))
    for change in sc.changes[:fields]:
        verb, rest = change[0], change[1:]
        if verb == "set":
            _kubectl(plane, "set", rest[0], sc.deployment, "-n", namespace, *rest[1:])
        else:
            _kubectl(plane, verb, sc.deployment, "-n", namespace, *rest)
    return repo, namespace


def _plan(plane: cp.ControlPlane, repo: Path, namespace: str, fields: int) -> tuple[int, int, float]:
    """One plan as a service cycle runs it: (renders before the locate step, renders in all, seconds)."""
    spec = TargetSpec(name=namespace, controllers=(Followed(controller=argocd.APPLICATION, text=f"{namespace}/web"),))
    before_locate: list[int] = []

    def step(name: str) -> None:
        if name == "locate and patch":
            before_locate.append(helm_adapter.SHARED.runs)

    cluster = KubeCluster.connect(kubeconfig=plane.kubeconfig)
    start, runs = time.perf_counter(), helm_adapter.SHARED.runs
    outcome = plan_target(spec=spec, repo=repo, edges=Edges(cluster=cluster, on_step=step))
    seconds = time.perf_counter() - start
    written = [cs for cs in outcome.plan.changesets if cs.files]
    assert len(written) == (1 if fields else 0), (outcome.plan.changesets, outcome.plan.errors)
    for cs in written:
        assert not cs.unresolved and len(cs.drifts) == fields, (cs, outcome.plan.errors)
        proof = outcome.rendered[cs.id].proof or ""
        assert f"changes exactly these {fields} field" in proof, proof
    load = (before_locate[0] if before_locate else helm_adapter.SHARED.runs) - runs
    return load, helm_adapter.SHARED.runs - runs, seconds


def measure(scenarios: Sequence[tuple[Scenario, int]]) -> list[Figures]:
    helm = build_helm()
    os.environ[helm_adapter.ENV_VAR] = str(helm)
    out: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="writeback-helm-bench-") as tmp:
        work = Path(tmp)
        (work / "home").mkdir()
        plane = cp.start(workdir=work / "cp")
        try:
            _kubectl(plane, "apply", "--server-side", "-f", str(CRDS / "argocd-application.yaml"))
            for _ in range(120):
                if plane.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                                 "crd/applications.argoproj.io", check=False).returncode == 0:  # fmt: skip
                    break
                time.sleep(0.5)
            for sc, fields in scenarios:
                repo, namespace = _world(plane, helm, work, sc, fields)
                helm_adapter.SHARED.clear()  # cold: a process that has rendered nothing yet
                load, total, seconds = _plan(plane, repo, namespace, fields)
                _, warm, _ = _plan(plane, repo, namespace, fields)  # the next cycle: no new drift
                budget = 3 * fields + 1
                out.append(Figures(scenario=sc.name, fields=fields, budget=budget, cold_load=load,
                                   cold_locate_and_proof=total - load, cold_total=total, warm_total=warm,
                                   cold_seconds=round(seconds, 2), within_budget=total <= max(budget, 1)))  # fmt: skip
                print(f"{sc.name} {fields} field(s): {total} render(s) cold (budget {budget}), {warm} warm",
                      file=sys.stderr, flush=True)  # fmt: skip
        finally:
            plane.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    podinfo = Scenario(name="podinfo", chart="podinfo", deployment="deployment/web-podinfo",
                       values="replicaCount: 2\nimage:\n  tag: 6.14.1\n", changes=PODINFO_CHANGES)  # fmt: skip
    nginx = Scenario(name="nginx", chart="nginx", deployment="deployment/web-nginx",
                     values="replicaCount: 2\n", changes=NGINX_CHANGES)  # fmt: skip
    plan = [(podinfo, n) for n in range(0, 6)] + [(nginx, len(NGINX_CHANGES))]
    figures = measure(plan)
    cols = ("scenario", "fields", "budget", "cold_load", "cold_locate_and_proof", "cold_total", "warm_total",
            "cold_seconds", "within_budget")  # fmt: skip
    print(" | ".join(cols))
    for f in figures:
        row: dict[str, Any] = asdict(f)
        print(" | ".join(str(row[c]) for c in cols))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    if args.json:
        args.json.write_text(json.dumps([asdict(f) for f in figures], indent=2) + "\n")
    return 0 if all(f.within_budget and f.warm_total == 0 for f in figures) else 1


if __name__ == "__main__":
    raise SystemExit(main())
