"""Helm as a source kind for a Flux HelmRelease on the real control plane: the real podinfo chart (a GitRepository
path) rendered by the real helm and installed as ``helm-controller``, a person's changes by the real kubectl.

- Issue 21's markers defect: a HelmRelease whose values file carries ``$writeback`` markers reported "no drift";
  now the config target that names the HelmRelease renders it, the marker wins for the field it binds and the
  other field is traced. Offline, from a dump captured from the control plane and the repo alone.
- ``spec.driftDetection.ignore`` is honoured as helm-controller honours it (its label selector too).
- ``source: markers`` on a HelmRelease target says why nothing is compared, instead of "no drift".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import by_path, diff_json, drifts_of, to_yaml
from tests.helm.cluster import CONTAINER, PODINFO, apply_object, helm_template, install_as_helm_controller, new_repo
from tests.support.cli import run_cli
from writeback.adapters import helm as helm_adapter

pytestmark = pytest.mark.controlplane

IMAGE = "ghcr.io/stefanprodan/podinfo"
MARKER = '{"$writeback": "Deployment.apps/%s/web-podinfo:%s.image", "part": "tag"}'
VALUES = """\
# prod values of the web release
replicaCount: 2
image:
  tag: 6.14.1 # %s
"""


@pytest.fixture(autouse=True)
def _helm(helm_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(helm_adapter.ENV_VAR, str(helm_bin))
    yield


def helmrelease(namespace: str, **spec: Any) -> dict[str, Any]:
    chart = {"chart": f"./{PODINFO}", "sourceRef": {"kind": "GitRepository", "name": "platform"}}
    chart |= spec.pop("chart", {})
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"interval": "5m", "chart": {"spec": chart}, **spec},
    }


def _world(controlplane: Any, helm_bin: Path, repo: Path, namespace: str, *, values: str, **spec: Any) -> str:
    files = [f"./{PODINFO}/values.yaml", "./envs/prod/values.yaml"]  # they replace the chart's values.yaml
    hr = helmrelease(namespace, chart={"valuesFiles": files}, **spec)
    sha = new_repo(repo, {"envs/prod/values.yaml": values, "apps/web.yaml": to_yaml(hr)})
    text = helm_template(helm_bin, repo / PODINFO, release="web", namespace=namespace, extra=["--no-hooks"],
                         values=[repo / "envs/prod/values.yaml"])  # fmt: skip
    install_as_helm_controller(controlplane, text, namespace=namespace, helmrelease="web", release="web")
    apply_object(controlplane, hr, manager="kustomize-controller")  # Flux's Kustomization applies the HelmRelease
    return sha


def test_a_helmrelease_with_markers_offline_from_a_dump_and_the_repo_alone(
    controlplane: Any, namespace: str, crds: list[str], helm_bin: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "platform"
    values = VALUES % (MARKER % (namespace, CONTAINER))
    _world(controlplane, helm_bin, repo, namespace, values=values)
    k = controlplane.kubectl
    k("set", "image", "deployment/web-podinfo", "-n", namespace, f"podinfo={IMAGE}:6.15.0")
    k("scale", "deployment/web-podinfo", "-n", namespace, "--replicas=4")
    dump = tmp_path / "live.yaml"
    got = k("get", "deployments,services,helmreleases", "-n", namespace, "-o", "yaml", "--show-managed-fields")
    dump.write_text(got.stdout)
    config = tmp_path / "writeback.yaml"
    target = {"name": "web", "repo_url": str(repo), "flux_helmrelease": f"{namespace}/web"}
    config.write_text(json.dumps({"targets": [target]}))

    code, doc = diff_json("--config", str(config), "--live", str(dump))

    assert code == 0 and doc["mode"] == "offline" and doc["problems"] == []
    web = by_path(drifts_of(doc, kind="Deployment", name="web-podinfo"))
    assert {p: (d["live"], d["decision"]) for p, d in web.items()} == {
        f"{CONTAINER}.image": (f"{IMAGE}:6.15.0", "writeback"),
        "spec.replicas": (4, "writeback"),
    }

    code, out, err = run_cli("plan", "-o", "json", "--config", str(config), "--live", str(dump))

    assert code == 0, err
    (cs,) = json.loads(out)["changesets"]
    assert cs["unresolved"] == []
    (f,) = cs["files"]
    assert f["path"] == "envs/prod/values.yaml"
    assert "-replicaCount: 2\n+replicaCount: 4\n" in f["diff"]
    assert "-  tag: 6.14.1 # {" in f["diff"] and "+  tag: 6.15.0 # {" in f["diff"]  # at the marker, kept
    assert "changes exactly these 2 fields of these 1 object" in cs["pullRequest"]["body"]

    # without a controller object, the path declares the one HelmRelease: its manifest is the release
    code, out, err = run_cli("plan", "-o", "json", "--repo", str(repo), "--path", "apps", "--source", "helm",
                             "--live", str(dump), "-n", namespace)  # fmt: skip
    assert code == 0, err
    assert [g["diff"] for c in json.loads(out)["changesets"] for g in c["files"]] == [f["diff"]]

    target["source"] = "markers"  # the issue's configuration: plain manifests, where only the HelmRelease is
    config.write_text(json.dumps({"targets": [target]}))
    code, out, err = run_cli("diff", "-o", "json", "--config", str(config), "--live", str(dump))
    assert code == 2, out
    problems = json.loads(out)["problems"]
    said = [p["message"] for p in problems]
    assert any("only GitOps controller objects" in m and "Flux HelmRelease" in m for m in said), problems


def test_drift_detection_ignore_is_honoured(
    controlplane: Any, namespace: str, crds: list[str], helm_bin: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "platform"
    other = {"labelSelector": "app.kubernetes.io/name=other"}  # selects none of the release's objects
    ignore = {"mode": "enabled", "ignore": [
        {"paths": ["/spec/replicas"], "target": {"kind": "Deployment"}},
        {"paths": ["/spec/template/spec/containers/0/env"], "target": other},  # so the env var is not ignored
    ]}  # fmt: skip
    _world(controlplane, helm_bin, repo, namespace, values=VALUES % "pinned", driftDetection=ignore)
    k = controlplane.kubectl
    k("scale", "deployment/web-podinfo", "-n", namespace, "--replicas=4")
    k("set", "env", "deployment/web-podinfo", "-n", namespace, "LOG_LEVEL=debug")
    flags = ("--repo", str(repo), "--kubeconfig", controlplane.kubeconfig, "--flux-helmrelease", f"{namespace}/web")

    _, doc = diff_json(*flags)

    web = by_path(drifts_of(doc, kind="Deployment", name="web-podinfo"))
    assert web["spec.replicas"]["decision"] == "ignore"
    assert (
        web["spec.replicas"]["reason"]
        == f"Flux HelmRelease {namespace}/web spec.driftDetection.ignore[0] ignores /spec/replicas"
    )
    assert web[f"{CONTAINER}.env[name=LOG_LEVEL]"]["decision"] == "writeback"

    code, out, err = run_cli("plan", "-o", "json", "--source", "helm", *flags)

    assert code == 0, err
    (cs,) = json.loads(out)["changesets"]
    (f,) = cs["files"]
    assert f["path"] == "envs/prod/values.yaml" and "+replicaCount" not in f["diff"]
    assert "+extraEnvs:\n+  - name: LOG_LEVEL\n+    value: debug\n" in f["diff"]
