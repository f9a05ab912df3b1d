"""The scale benchmark harness (bench/bench_scale.py) still works: a smoke size, one round, on both worlds.
Not a timing."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.cp import ControlPlane

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from bench_scale import measure_scale  # noqa: E402
from scale_appliers import ARGO, FLUX  # noqa: E402


@pytest.mark.controlplane
def test_scale_harness_loads_measures_and_counts_requests(controlplane: ControlPlane, tmp_path: Path) -> None:
    prefix = f"wb-scale-{uuid.uuid4().hex[:6]}"
    try:
        result = measure_scale(
            objects=30,
            rounds=1,
            kubeconfig=controlplane.kubeconfig,
            kubectl=controlplane.bin_dir / "kubectl",
            workdir=tmp_path,
            namespace_prefix=prefix,
            warmup=False,
        )
    finally:
        names = [f"{prefix}-{i}" for i in range(10)]
        controlplane.kubectl("delete", "namespace", "--wait=false", "--ignore-not-found", *names)
    # the harness itself checked that every floor run listed all 30 objects and that every diff wrote back
    # exactly the three people's edits; here: what it reports
    assert result.objects == 30
    assert result.edited_files == 3  # one file per changed object
    summary = result.summary()
    assert set(result.runs) == {"floor (diff)", "writeback diff", "floor (plan)", "writeback plan"}
    for name, runs in result.runs.items():
        assert len(runs) == 1, name
        run = runs[0].run
        assert run.wall > 0 and run.cpu > 0 and run.peak_rss > 10 * 2**20, name
        assert summary[name]["cpu_rounds"] == [run.cpu], name
    # each command's CPU over its own floor's in the same round (one round: the ratio of the two runs)
    for command in ("diff", "plan"):
        ratio = result.runs[f"writeback {command}"][0].run.cpu / result.runs[f"floor ({command})"][0].run.cpu
        assert summary[f"writeback {command}"]["cpu_paired_ratio"] == (ratio, ratio, ratio), command
        assert "cpu_paired_ratio" not in summary[f"floor ({command})"], command
    # API requests from the apiserver's own metric: one list per kind and namespace (10 apps in 10 namespaces,
    # one page each), and writeback's dry-runs for the three drifted objects only
    floor = summary["floor (diff)"]["requests_by_kind"]
    assert floor == {"LIST configmaps": 10, "LIST deployments": 10, "LIST services": 10}
    diff = summary["writeback diff"]["requests_by_kind"]
    assert {k: v for k, v in diff.items() if k.startswith("LIST")} == floor
    dry_runs = {k: v for k, v in diff.items() if "dry-run" in k}
    assert dry_runs == {
        "POST deployments (dry-run)": 1,
        "POST configmaps (dry-run)": 1,
        "POST services (dry-run)": 1,
    }


def _managers(item: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((m["manager"], m["operation"], m.get("subresource", "")) for m in item["metadata"]["managedFields"])


@pytest.mark.controlplane
def test_the_appliers_world_looks_as_argo_cd_and_flux_leave_it_and_is_measured_alike(
    controlplane: ControlPlane, tmp_path: Path
) -> None:
    prefix = f"wb-apps-{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}-{i}" for i in range(10)]
    try:
        result = measure_scale(
            objects=60,
            rounds=1,
            kubeconfig=controlplane.kubeconfig,
            kubectl=controlplane.bin_dir / "kubectl",
            workdir=tmp_path,
            namespace_prefix=prefix,
            world_kind="appliers",
            warmup=False,
        )
        kinds = "serviceaccounts,deployments,services,configmaps,roles,rolebindings"
        live = {
            ns: json.loads(controlplane.kubectl("get", kinds, "-n", ns, "-o", "json", "--show-managed-fields").stdout)
            for ns in names[:2]
        }
    finally:
        controlplane.kubectl("delete", "namespace", "--wait=false", "--ignore-not-found", *names)
    # the harness checked that every diff wrote back exactly the six people's edits (one of each kind) and that
    # plan edited exactly their files; here: the world as the controllers leave it, and what the harness reports
    assert result.objects == 60 and result.world_kind == "appliers"
    assert result.edited_files == 6
    for ns, applier in ((names[0], ARGO), (names[1], FLUX)):
        items = live[ns]["items"]
        assert len(items) == 6  # one app per namespace at this size
        for item in items:
            meta, what = item["metadata"], f"{ns}/{item['kind']}/{item['metadata']['name']}"
            if applier == ARGO:
                tracking = meta["annotations"]["argocd.argoproj.io/tracking-id"]
                group = item["apiVersion"].rpartition("/")[0]  # "<app>:<group>/<Kind>:<namespace>/<name>"
                assert tracking == f"{ns}:{group}/{item['kind']}:{ns}/{meta['name']}", what
                assert "kustomize.toolkit.fluxcd.io/name" not in meta["labels"], what
            else:
                assert meta["labels"]["kustomize.toolkit.fluxcd.io/namespace"] == "flux-system", what
                assert "argocd.argoproj.io/tracking-id" not in meta.get("annotations", {}), what
            managers = _managers(item)
            assert (applier, "Apply", "") in managers, what
            if item["kind"] == "Deployment":
                assert ("kube-controller-manager", "Update", "status") in managers, what
    # app 0 (names[0], Argo CD): its ServiceAccount was annotated by a person; app 1 (Flux): its Deployment edited
    sa = next(i for i in live[names[0]]["items"] if i["kind"] == "ServiceAccount")
    assert ("kubectl-annotate", "Update", "") in _managers(sa)
    summary = result.summary()
    floor = summary["floor (diff)"]["requests_by_kind"]
    assert floor == {
        f"LIST {plural}": 10
        for plural in ("serviceaccounts", "deployments", "services", "configmaps", "roles", "rolebindings")
    }
    diff = summary["writeback diff"]["requests_by_kind"]
    assert {k: v for k, v in diff.items() if k.startswith("LIST")} == floor
    assert sum(v for k, v in diff.items() if "dry-run" in k) == 6  # one per drifted object
    assert sum(diff.values()) == 60 + 6
    for name, runs in result.runs.items():
        out = runs[0].run.stdout
        if name.startswith("floor"):  # the lean floor: raw JSON, no model class, libyaml
            floor_out = json.loads(out)
            assert floor_out["model_modules"] == 0 and floor_out["libyaml"] is True
            assert floor_out["documents"] == 60
        assert runs[0].run.peak_rss > runs[0].run.launcher_rss, name
