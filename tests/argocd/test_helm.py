"""Scenario e against the real Argo CD (opt-in): Helm rendered as Argo CD renders it.

An Application with a Helm source (the podinfo chart's path in the repo, a prod `valueFiles` entry, `parameters`, a
`releaseName`) is synced by the real repo-server and application-controller. writeback's own render of the chart,
read from that live Application, is identical object by object to what the controller applied (each object's
last-applied configuration, which client-side sync writes from the repo-server's manifests). Then a person's
`kubectl set image` (reverted by selfHeal at once) becomes the values edit of the Helm source, proven by a re-render;
after the merge Argo CD syncs to exactly the person's image: Synced, nothing reverted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.argocd.conftest import ArgoShopMaker
from tests.argocd.scenarios import ARGOCD_NAMESPACE, ArgoShop
from tests.e2e.support import TARGET
from tests.support.polling import wait_until
from tests.support.testdata import CHARTS
from writeback.adapters import helm as helm_adapter
from writeback.adapters.kube.cluster import KubeCluster
from writeback.gitops.argocd import APPLICATION, TRACKING_ANNOTATION
from writeback.gitops.base import Followed
from writeback.pipeline.detecting import detect
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.pipeline.warming import WarmState

pytestmark = [pytest.mark.argocd, pytest.mark.controlplane]

CHART = "charts/podinfo"
VALUES = "envs/prod/values.yaml"
PROD_VALUES = """\
# prod overrides (reviewed by the platform team)
replicaCount: 2 # two replicas in prod

image:
  tag: 6.14.1 # pinned
"""
RELEASE = "shop-web"
DEPLOYMENT = f"{RELEASE}-podinfo"
IMAGE = "ghcr.io/stefanprodan/podinfo"
HELM = {
    "releaseName": RELEASE,
    "valueFiles": [f"../../{VALUES}"],
    "parameters": [{"name": "ui.message", "value": "hello from prod"}],
}


@pytest.fixture(autouse=True)
def _helm(helm_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(helm_adapter.ENV_VAR, str(helm_bin))


def _repo_files() -> dict[str, str]:
    files = {f"{CHART}/{p.relative_to(CHARTS / 'podinfo').as_posix()}": p.read_text()
             for p in sorted((CHARTS / "podinfo").rglob("*")) if p.is_file()}  # fmt: skip
    return {**files, VALUES: PROD_VALUES}


def _shop(make_argo_shop: ArgoShopMaker) -> ArgoShop:
    return make_argo_shop(repo_files=_repo_files(), path=CHART, source={"helm": HELM})


def _config(shop: ArgoShop) -> dict[str, Any]:
    config = shop.config()
    target = config["targets"][0]
    target.update(path=CHART, source="helm", selectors=[
        {"apiVersion": "apps/v1", "kind": "Deployment", "namespaces": [shop.namespace]},
        {"apiVersion": "v1", "kind": "Service", "namespaces": [shop.namespace]},
    ])  # fmt: skip
    return config


def _applied(shop: ArgoShop, kind: str, name: str) -> dict[str, Any]:
    """What the controller applied: the object's last-applied configuration, without Argo CD's tracking id."""
    live = shop.get(kind, name)
    text = live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    applied: dict[str, Any] = json.loads(text)
    annotations = applied["metadata"].get("annotations") or {}
    annotations.pop(TRACKING_ANNOTATION, None)
    if not annotations:
        applied["metadata"].pop("annotations", None)
    return applied


def test_writebacks_render_is_what_argocd_applied_and_a_set_image_becomes_the_values_edit(
    make_argo_shop: ArgoShopMaker, helm_bin: Path
) -> None:
    shop = _shop(make_argo_shop)
    application = shop.application()
    managed = sorted((r["kind"], r["name"]) for r in application["status"]["resources"])
    assert managed == [("Deployment", DEPLOYMENT), ("Service", DEPLOYMENT)]

    # writeback's render, from the live Application, is what the controller applied, object by object
    spec = TargetSpec(
        name=TARGET,
        path=CHART,
        source="helm",
        controllers=(Followed(controller=APPLICATION, text=f"{ARGOCD_NAMESPACE}/{shop.sync.name}"),),
    )
    cluster = KubeCluster.connect(kubeconfig=shop.kubeconfig, context="writeback-test")
    # the service's path: it keeps every Git body (a one-shot run lets go of those its managers settle)
    detection = detect(spec=spec, repo=shop.remote.work, edges=Edges(cluster=cluster, memo=WarmState()))
    assert detection.problems == () and detection.source.name == "helm"
    rendered = {(d.ref.kind, d.ref.name): dict(d.body) for d in detection.desired}
    assert sorted(rendered) == managed
    for kind, name in managed:
        assert rendered[(kind, name)] == _applied(shop, kind, name), kind

    # a person's kubectl set image: selfHeal reverts it, writeback writes the values edit, the reviewer merges
    service = shop.serve(_config(shop))
    shop.controlplane.kubectl("set", "image", f"deployment/{DEPLOYMENT}", "-n", shop.namespace,
                              f"podinfo={IMAGE}:6.14.2")  # fmt: skip
    service.wait(
        "the PR with the values edit and its proof",
        lambda: len(shop.forge.prs) == 1 and "helm template re-render" in shop.only_pr()["body"],
        timeout=120,
    )
    pr = shop.only_pr()
    diff = shop.pr_diff(pr)
    changed = [x for x in diff.splitlines() if x[:1] in "+-" and x[:3] not in ("+++", "---")]
    assert changed == ["-  tag: 6.14.1 # pinned", "+  tag: 6.14.2 # pinned"], diff
    assert f"a/{VALUES}" in diff
    merged = shop.merge(pr)
    shop.sync.wait_applied(merged)
    image = lambda: shop.get("deployment", DEPLOYMENT)["spec"]["template"]["spec"]["containers"][0]["image"]  # noqa: E731
    wait_until("Argo CD applying the person's image from Git", lambda: image() == f"{IMAGE}:6.14.2", timeout=30)
    application = shop.application()
    assert application["status"]["sync"]["status"] == "Synced"
    service.wait_cycles(2)
    assert service.metric("writeback_drift_fields", target=TARGET, decision="writeback") == 0
    assert image() == f"{IMAGE}:6.14.2"
