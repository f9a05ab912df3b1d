"""Break-glass guards on the real kube-apiserver: the authorizer is asked before any patch (a denial names the
verb, resource and namespace, exit 2, nothing changed), the record says who the API server authenticated, a
denied patch is never retried, and an unreachable cluster is an error (exit 3), never "no break-glass"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.breakglass.support import account_kubeconfig, wait_allowed
from tests.support.breakglass_record import record
from tests.support.cli import run_cli
from tests.support.controllers import argocd_app
from tests.support.kube import get
from tests.support.services import free_port
from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.controllers import ControllerObjects
from writeback.breakglass import flow
from writeback.errors import ClusterConflict, ClusterForbidden
from writeback.gitops import argocd

APPS = "applications.argoproj.io"
READ = {"apiGroups": ["argoproj.io"], "resources": ["applications"], "verbs": ["get", "list"]}
PATCH = {"apiGroups": ["argoproj.io"], "resources": ["applications"], "verbs": ["get", "list", "patch"]}
EVENTS = {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}


@pytest.mark.controlplane
def test_a_denied_patch_is_refused_before_any_write_and_who_is_the_authenticated_user(
    controlplane: Any, crds: list[str], namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argocd_app(controlplane, namespace, "web")
    before = get(controlplane, APPS, namespace, "web")
    reader = account_kubeconfig(controlplane, namespace, tmp_path / "reader", name="reader", rules=[READ])
    wait_allowed(controlplane, reader, "get", APPS, "-n", namespace)
    code, out, err = run_cli("break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason", "r",
                         "--ttl", "1h", "--kubeconfig", reader)  # fmt: skip
    assert code == 2, out + err
    assert f"not allowed to patch applications.argoproj.io 'web' in namespace {namespace}" in err
    after = get(controlplane, APPS, namespace, "web")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    # a denial that reaches the patch itself (no access review in the way) is raised at once, never retried
    objects = ControllerObjects(cluster=KubeCluster.connect(kubeconfig=reader))
    ref = argocd.APPLICATION.ref(f"{namespace}/web")
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}}]
    with pytest.raises(ClusterForbidden, match="403"):
        flow.patch(objects, ref, lambda body: ops)
    assert objects.patch_calls == 1

    # the on-call's own account: the record names the ServiceAccount the API server authenticated
    oncall = account_kubeconfig(controlplane, namespace, tmp_path / "oncall", name="oncall", rules=[PATCH, EVENTS])
    wait_allowed(controlplane, oncall, "patch", APPS, "-n", namespace)
    code, out, err = run_cli("break-glass", "start", "--argocd-app", f"{namespace}/web", "--reason", "r",
                         "--ttl", "1h", "--kubeconfig", oncall)  # fmt: skip
    assert code == 0, out + err
    rec = record(get(controlplane, APPS, namespace, "web"))
    assert rec is not None and rec["by"] == rec["kubeUser"] == f"system:serviceaccount:{namespace}:oncall"


@pytest.mark.controlplane
def test_only_a_conflict_caused_by_another_writer_is_retried(
    controlplane: Any, crds: list[str], namespace: str
) -> None:
    argocd_app(controlplane, namespace, "web")
    objects = ControllerObjects(cluster=KubeCluster.connect(kubeconfig=controlplane.kubeconfig))
    ref = argocd.APPLICATION.ref(f"{namespace}/web")
    failing = [{"op": "test", "path": "/spec/project", "value": "not-this-one"}]  # 422, and nobody else wrote
    with pytest.raises(ClusterConflict, match="422"):
        flow.patch(objects, ref, lambda body: failing)
    assert objects.patch_calls == 1
    # a kind the cluster does not serve is the one thing skipped when listing
    assert objects.list_kind(api_version="example.com/v1", kind="Nothing", namespace=None) == []


def _dead_kubeconfig(path: Path) -> str:
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": "dead",
        "clusters": [{"name": "dead", "cluster": {"server": f"https://127.0.0.1:{free_port()}",
                                                  "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "u", "namespace": "argocd"}}],
    }  # fmt: skip
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize(
    "command",
    [("status", "-A"), ("status", "-A", "-o", "json"), ("status", "--controller-namespace", "argocd"),
     ("expire", "-A", "--no-backport"), ("expire", "-A", "--no-backport", "-o", "json"),
     ("start", "--argocd-app", "argocd/web", "--reason", "r", "--ttl", "1h"),
     ("end", "--argocd-app", "argocd/web", "--no-backport")],
)  # fmt: skip
def test_an_unreachable_cluster_is_an_error_never_no_break_glass(
    command: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli("break-glass", *command, "--kubeconfig", _dead_kubeconfig(tmp_path / "kc"))
    assert code == 3, out + err
    assert out == ""  # no "no break-glass", no "[]"
    [line] = err.strip().splitlines()
    assert line.startswith("writeback: error: ") and "cannot reach the API server https://127.0.0.1:" in line


def test_a_break_glass_longer_than_the_configured_maximum_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "writeback.yaml"
    cfg.write_text(json.dumps({"targets": [{"name": "t", "repo_url": "x"}], "break_glass": {"max_ttl": "2h"}}))
    code, _, err = run_cli("break-glass", "start", "--argocd-app", "argocd/web", "--reason", "r", "--ttl", "3h",
                       "--config", str(cfg))  # fmt: skip
    assert code == 2 and "--ttl '3h': at most 2h (break_glass.max_ttl" in err
    cfg.write_text(json.dumps({"targets": [{"name": "t", "repo_url": "x"}], "break_glass": {"max_ttl": "45d"}}))
    code, _, err = run_cli("break-glass", "start", "--argocd-app", "argocd/web", "--reason", "r", "--ttl", "3h",
                       "--config", str(cfg))  # fmt: skip
    assert code == 2 and "break_glass.max_ttl: '45d': at most 30d" in err
