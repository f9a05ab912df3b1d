"""The cluster's capabilities on the real control plane: the kube adapter's discovery (``/version``, aggregated and
legacy discovery), and a chart whose templates branch on ``.Capabilities.APIVersions.Has`` and
``.Capabilities.KubeVersion`` rendered as the controller renders it for this cluster.

The chart annotates its pods when the cluster serves KEDA's ``ScaledObject`` (the ``crds`` fixture installs it)
and takes its image from ``next.image`` on a Kubernetes newer than the control plane's. Rendered with helm's own
defaults (a newer Kubernetes, no KEDA), Git would say another image and no annotation: the annotation would be
false drift and the person's image would be traced to the wrong key. In cluster mode writeback reads the
capabilities from the cluster; offline, ``--kube-version``/``--api-versions`` (or the target's keys) give them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import by_path, diff_json, drifts_of, to_yaml
from tests.helm.cluster import (
    apply_as_argocd,
    apply_object,
    argocd_application,
    helm_template,
    install_as_helm_controller,
    new_repo,
)
from tests.support.cli import run_cli
from writeback.adapters import helm as helm_adapter
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.discovery import DiscoveryOnce, read_discovery
from writeback.sources.helm.capabilities import kube_version_of

pytestmark = pytest.mark.controlplane

KEDA = "keda.sh/v1alpha1/ScaledObject"
CHART = "charts/caps"
VALUES = "envs/prod/values.yaml"
PROD = """\
# prod (reviewed by the platform team)
image: nginx:1.27.0 # this cluster's
next:
  image: nginx:1.29.0 # for the next Kubernetes
"""
IMAGE = "spec.template.spec.containers[name=app].image"
ANNOTATION = "spec.template.metadata.annotations.autoscaling"


def _chart(newer: str) -> dict[str, str]:
    """The chart: ``newer`` is the first Kubernetes minor that takes ``next.image`` (one past the cluster's)."""
    deployment = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}
      {{- if .Capabilities.APIVersions.Has "KEDA" }}
      annotations:
        autoscaling: keda
      {{- end }}
    spec:
      containers:
        - name: app
          {{- if semverCompare ">=NEWER-0" .Capabilities.KubeVersion.Version }}
          image: {{ .Values.next.image }}
          {{- else }}
          image: {{ .Values.image }}
          {{- end }}
""".replace("KEDA", KEDA).replace("NEWER", newer)
    return {
        f"{CHART}/Chart.yaml": "apiVersion: v2\nname: caps\nversion: 0.1.0\n",
        f"{CHART}/values.yaml": "image: nginx:1.25.0\nnext:\n  image: nginx:1.25.0\n",
        f"{CHART}/templates/deployment.yaml": deployment,
    }


@pytest.fixture(autouse=True)
def _helm(helm_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(helm_adapter.ENV_VAR, str(helm_bin))
    yield


def _server_version(controlplane: Any) -> str:
    version: str = json.loads(controlplane.kubectl("get", "--raw", "/version").stdout)["gitVersion"]
    return version


def _newer(version: str) -> str:
    major, minor = kube_version_of(version).removeprefix("v").split(".")[:2]
    return f"{major}.{int(minor) + 1}"


def test_discovery_reads_the_servers_version_and_every_served_api(controlplane: Any, crds: list[str]) -> None:
    cluster = KubeCluster.connect(kubeconfig=controlplane.kubeconfig)
    gets: list[str] = []
    once = DiscoveryOnce(cluster, count=gets.append)

    found = once()

    assert once() is found and gets == ["get"] * 3  # /version, /api, /apis: read once
    assert found.git_version == _server_version(controlplane)
    served = {(r.group_version, r.name, r.kind) for r in found.resources}
    assert {("v1", "pods", "Pod"), ("apps/v1", "deployments", "Deployment"), ("apps/v1", "deployments/scale", "Scale"),
            ("keda.sh/v1alpha1", "scaledobjects", "ScaledObject")} <= served  # fmt: skip
    deployments = next(r for r in found.resources if (r.group_version, r.name) == ("apps/v1", "deployments"))
    assert {"list", "watch"} <= deployments.verbs
    assert found.group_versions[0] == "v1" and "apps/v1" in found.preferred and "keda.sh/v1alpha1" in found.preferred
    # the legacy documents (one per group/version) say the same as the aggregated ones
    legacy = read_discovery(cluster, aggregated=False)
    assert legacy.git_version == found.git_version
    assert set(legacy.group_versions) == set(found.group_versions) and set(legacy.preferred) == set(found.preferred)
    assert {(r.group_version, r.name, r.kind, r.verbs) for r in legacy.resources} == {
        (r.group_version, r.name, r.kind, r.verbs) for r in found.resources
    }


def _argocd_world(controlplane: Any, helm_bin: Path, repo: Path, namespace: str) -> tuple[str, str]:
    """The Application synced as Argo CD syncs it for this cluster; the server's version as Argo CD names it."""
    version = kube_version_of(_server_version(controlplane))
    app = argocd_application("web", namespace=namespace, path=CHART, value_files=[f"../../{VALUES}"])
    sha = new_repo(repo, {**_chart(_newer(version)), VALUES: PROD, "apps/web.yaml": to_yaml(app)}, charts=())
    text = helm_template(helm_bin, repo / CHART, release="web", namespace=namespace, values=[repo / VALUES],
                         extra=["--kube-version", version, "--api-versions", KEDA, "--include-crds"])  # fmt: skip
    assert "autoscaling: keda" in text and "nginx:1.27.0" in text
    apply_as_argocd(controlplane, text, namespace=namespace)
    apply_object(controlplane, {**app, "status": {"sync": {"status": "Synced", "revision": sha}}})
    controlplane.kubectl("set", "image", "deployment/web", "-n", namespace, "app=nginx:1.27.1")  # the hotfix
    return sha, version


def _only_the_image(doc: dict[str, Any]) -> None:
    assert doc["problems"] == []
    web = by_path(drifts_of(doc, kind="Deployment", name="web"))
    kept = {p: (d["live"], d["decision"]) for p, d in web.items() if d["decision"] != "ignore"}
    assert kept == {IMAGE: ("nginx:1.27.1", "writeback")}, web
    assert [d for d in doc["drifts"] if d["decision"] != "ignore" and d["resource"]["name"] != "web"] == []


def _the_image_edit(plan: dict[str, Any]) -> str:
    (cs,) = plan["changesets"]
    assert plan["problems"] == [] and cs["unresolved"] == []
    (f,) = cs["files"]
    assert f["path"] == VALUES
    assert "-image: nginx:1.27.0 # this cluster's\n+image: nginx:1.27.1 # this cluster's" in f["diff"], f["diff"]
    assert "1.29.0" not in "".join(line for line in f["diff"].splitlines() if line[:1] in "+-")
    assert "changes exactly these 1 field of these 1 object" in cs["pullRequest"]["body"]
    diff: str = f["diff"]
    return diff


def test_an_application_renders_with_the_clusters_capabilities_in_cluster_mode_and_as_given_offline(
    controlplane: Any, namespace: str, crds: list[str], helm_bin: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "platform"
    sha, version = _argocd_world(controlplane, helm_bin, repo, namespace)
    flags = ("--repo", str(repo), "--argocd-app", f"{namespace}/web")
    online = ("--kubeconfig", controlplane.kubeconfig)

    _, doc = diff_json(*flags, *online)

    assert doc["revision"] == sha
    _only_the_image(doc)
    code, out, err = run_cli("plan", "-o", "json", *flags, *online)
    assert code == 0, err
    edit = _the_image_edit(json.loads(out))

    # offline, from a dump: helm's own defaults (a newer Kubernetes, no KEDA) say something else than the cluster
    dump = tmp_path / "live.yaml"
    got = controlplane.kubectl("get", "deployments,applications", "-n", namespace, "-o", "yaml",
                               "--show-managed-fields")  # fmt: skip
    dump.write_text(got.stdout)
    offline = ("--live", str(dump))

    _, doc = diff_json(*flags, *offline)

    web = by_path(drifts_of(doc, kind="Deployment", name="web"))
    assert ANNOTATION in web  # false drift: Git's render has no annotation
    assert web[IMAGE]["git"] == "nginx:1.29.0"  # the wrong branch of the template

    # given as flags, they render as the cluster does
    given = ("--kube-version", version, "--api-versions", f"apps/v1,{KEDA}")
    _, doc = diff_json(*flags, *offline, *given)
    _only_the_image(doc)
    code, out, err = run_cli("plan", "-o", "json", *flags, *offline, *given)
    assert code == 0, err
    assert _the_image_edit(json.loads(out)) == edit

    # or as the target's keys
    config = tmp_path / "writeback.yaml"
    target = {"name": "web", "repo_url": str(repo), "argocd_application": f"{namespace}/web",
              "kube_version": version, "api_versions": [KEDA]}  # fmt: skip
    config.write_text(json.dumps({"targets": [target]}))
    code, out, err = run_cli("plan", "-o", "json", "--config", str(config), *offline)
    assert code == 0, err
    assert _the_image_edit(json.loads(out)) == edit


def test_a_helmrelease_renders_with_the_clusters_capabilities(
    controlplane: Any, namespace: str, crds: list[str], helm_bin: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "platform"
    git_version = _server_version(controlplane)
    chart = {"chart": f"./{CHART}", "sourceRef": {"kind": "GitRepository", "name": "platform"},
             "valuesFiles": [f"./{CHART}/values.yaml", f"./{VALUES}"]}  # fmt: skip
    hr = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"interval": "5m", "chart": {"spec": chart}},
    }
    new_repo(repo, {**_chart(_newer(git_version)), VALUES: PROD, "apps/web.yaml": to_yaml(hr)}, charts=())
    # helm-controller's install: the server's gitVersion and everything it serves
    text = helm_template(helm_bin, repo / CHART, release="web", namespace=namespace, values=[repo / VALUES],
                         extra=["--no-hooks", "--kube-version", git_version, "--api-versions", KEDA])  # fmt: skip
    assert "autoscaling: keda" in text and "nginx:1.27.0" in text
    install_as_helm_controller(controlplane, text, namespace=namespace, helmrelease="web", release="web")
    apply_object(controlplane, hr, manager="kustomize-controller")
    controlplane.kubectl("set", "image", "deployment/web", "-n", namespace, "app=nginx:1.27.1")
    flags = ("--repo", str(repo), "--kubeconfig", controlplane.kubeconfig, "--flux-helmrelease", f"{namespace}/web")

    _, doc = diff_json(*flags)

    _only_the_image(doc)
    code, out, err = run_cli("plan", "-o", "json", *flags)
    assert code == 0, err
    _the_image_edit(json.loads(out))
