"""Scenario 8 (pagination) and 9 (Git ahead of live) on the real control plane, through the pipeline and CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import (
    apply_argocd_application,
    by_path,
    configmap,
    diff_json,
    drifts_of,
    git_ahead,
    sync,
    write,
)
from writeback.adapters.kube.cluster import KubeCluster
from writeback.pipeline.detecting import detect
from writeback.pipeline.targets import Edges, TargetSpec

pytestmark = pytest.mark.controlplane

APP = "spec.template.spec.containers[name=app]"


def test_pagination_page_size_two_seven_objects(controlplane: Any, namespace: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    files = [write(repo, f"cms/cm-{i}.yaml", configmap(f"cm-{i}", {"i": str(i)})) for i in range(7)]
    sync(controlplane, "argocd-server-side", namespace, *files)
    cluster = KubeCluster.connect(kubeconfig=controlplane.kubeconfig)

    found = detect(
        spec=TargetSpec(name="shop", namespaces=(namespace,), page_size=2), repo=repo, edges=Edges(cluster=cluster)
    )

    assert sorted(o.ref.name for o in found.live) == [f"cm-{i}" for i in range(7)]
    assert cluster.list_calls == 4  # one kind, one namespace: pages of 2, 2, 2, 1
    assert cluster.list_calls_by_kind == {"ConfigMap": 4}
    assert [d for d in found.report.drifts if d.decision.value in ("deleted", "new", "writeback")] == []
    assert cluster.dry_run_calls == 0  # no raw diff: no dry-run


@pytest.fixture
def ahead(controlplane: Any, namespace: str, git_remote: Any) -> dict[str, str]:
    return git_ahead(controlplane, namespace, git_remote, applier="argocd-client-side")


def _assert_not_reverted(doc: dict[str, Any], *, v1: str) -> None:
    assert doc["revision"] == v1
    web = by_path(drifts_of(doc, kind="Deployment", name="web"))
    assert f"{APP}.image" not in web, web  # live runs the applied revision's image: no drift, no revert
    written = [p for p, d in web.items() if d["decision"] == "writeback"]
    assert written and all(p.startswith(f"{APP}.env[name=HOTFIX]") for p in written), written


def test_git_ahead_with_revision_flag_does_not_revert_the_commit(
    ahead: dict[str, str], git_remote: Any, controlplane: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc = diff_json("--repo", str(git_remote.work), "--kubeconfig", controlplane.kubeconfig,
                       "--revision", ahead["v1"])  # fmt: skip
    _assert_not_reverted(doc, v1=ahead["v1"])
    assert any("ahead" in n for n in doc.get("notes", []))
    # the working tree is untouched by reading the old revision
    assert "nginx:1.27" in (git_remote.work / "apps" / "web.yaml").read_text()


def test_git_ahead_with_argocd_application_status(
    ahead: dict[str, str],
    git_remote: Any,
    controlplane: Any,
    namespace: str,
    crds: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = {"sync": {"status": "OutOfSync", "revision": ahead["v1"]}}
    apply_argocd_application(controlplane, namespace, git_remote, status)

    _, doc = diff_json("--repo", str(git_remote.work), "--kubeconfig", controlplane.kubeconfig,
                       "--argocd-app", f"{namespace}/web")  # fmt: skip
    _assert_not_reverted(doc, v1=ahead["v1"])
    assert "status.sync.revision" in doc["revisionSource"]


def test_git_ahead_with_flux_last_applied_revision(
    ahead: dict[str, str],
    git_remote: Any,
    controlplane: Any,
    namespace: str,
    crds: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    ks = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "interval": "5m",
            "path": "./apps",
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": "r"},
        },
    }
    k = controlplane.kubectl
    k("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-", input=json.dumps(ks))
    status = json.dumps({"status": {"lastAppliedRevision": f"main@sha1:{ahead['v1']}"}})
    k("patch", "kustomization.kustomize.toolkit.fluxcd.io", "web", "-n", namespace, "--subresource=status",
      "--type=merge", "-p", status)  # fmt: skip

    _, doc = diff_json("--repo", str(git_remote.work), "--kubeconfig", controlplane.kubeconfig,
                       "--flux-kustomization", f"{namespace}/web")  # fmt: skip
    _assert_not_reverted(doc, v1=ahead["v1"])


def test_head_is_the_last_resort(
    ahead: dict[str, str], git_remote: Any, controlplane: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc = diff_json("--repo", str(git_remote.work), "--kubeconfig", controlplane.kubeconfig)
    assert doc["revision"] == ahead["v2"]
    assert "HEAD" in doc["revisionSource"]
    web = by_path(drifts_of(doc, kind="Deployment", name="web"))
    image = web[f"{APP}.image"]  # compared with the head, live's old image is a difference...
    assert (image["live"], image["git"]) == ("nginx:1.25", "nginx:1.27")
    assert image["decision"] != "writeback"  # ...on a field the GitOps controller owns: never a revert PR


def test_field_the_head_changed_is_pending_not_drift(
    ahead: dict[str, str], git_remote: Any, controlplane: Any, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    controlplane.kubectl("set", "image", "deployment/web", "-n", namespace, "app=nginx:1.26")
    _, doc = diff_json("--repo", str(git_remote.work), "--kubeconfig", controlplane.kubeconfig,
                       "--revision", ahead["v1"])  # fmt: skip
    image = by_path(drifts_of(doc, kind="Deployment", name="web"))[f"{APP}.image"]
    assert (image["live"], image["git"], image["decision"]) == ("nginx:1.26", "nginx:1.25", "pending")
