"""What the real Flux controllers (source-controller + kustomize-controller v1.9.6) do to applied objects, checked
on the test control plane: field managers, labels, drift correction, suspend/resume, revisions (issue 11)."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.cp import ControlPlane
from tests.flux.fixtures import SyncMaker
from tests.flux.sync import KUSTOMIZATION, WATCH_LABEL, FluxSync
from tests.support.polling import wait_until
from writeback.drift.deciding import Role, manager_role
from writeback.settings import Policy

pytestmark = [pytest.mark.controlplane, pytest.mark.flux]

INTERVAL = 5.0  # seconds: the GitRepository's and the Kustomization's interval
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  level: info
"""
EDITOR = """\
import sys
path = sys.argv[1]
with open(path) as f:
    text = f.read()
assert '"data": {' in text, text
with open(path, "w") as f:  # as a person would: one new key at the top of data (kubectl -o json edits JSON)
    f.write(text.replace('"data": {', '"data": {"hotfix": "added by kubectl edit",', 1))
"""


def _configmap(plane: ControlPlane, namespace: str) -> dict[str, Any]:
    got: dict[str, Any] = json.loads(
        plane.kubectl("get", "configmap", "app-config", "-n", namespace, "-o", "json", "--show-managed-fields").stdout
    )
    return got


def _managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", ())]


@pytest.fixture
def applied(flux_sync: SyncMaker, namespace: str, git_remote: Any) -> FluxSync:
    """A Flux sync (5 s intervals, prune, targetNamespace) whose first commit, one ConfigMap, is applied."""
    sync = flux_sync(namespace=namespace, remote=git_remote, interval=f"{INTERVAL:.0f}s", target_namespace=namespace)
    sync.wait_applied(sync.push({"app/config.yaml": CONFIGMAP}, "app config"))
    return sync


def test_applied_objects_and_the_kustomization_carry_flux_managers_and_labels(
    applied: FluxSync, controlplane: ControlPlane, namespace: str
) -> None:
    live = _configmap(controlplane, namespace)
    assert _managers(live) == [("kustomize-controller", "Apply")]
    assert {k: live["metadata"]["labels"].get(k) for k in applied.labels} == applied.labels

    ks = applied.kustomization()
    writers = {(e["manager"], e.get("subresource", "")) for e in ks["metadata"]["managedFields"]}
    assert ("gotk-kustomize-controller", "status") in writers
    finalizers = [
        e for e in ks["metadata"]["managedFields"] if "f:finalizers" in e.get("fieldsV1", {}).get("f:metadata", {})
    ]
    assert [e["manager"] for e in finalizers] == ["gotk-kustomize-controller"]
    assert not [m for m, _ in writers if m == "kustomize-controller"]

    # writeback's default policy: the applier is the GitOps tool, Flux's own bookkeeping a controller
    policy = Policy()
    assert manager_role(policy, "kustomize-controller") is Role.GITOPS
    seen = {m for m, _ in writers} | {e["manager"] for e in applied.git_repository()["metadata"]["managedFields"]}
    assert {m: manager_role(policy, m) for m in seen - {"writeback-tests"}} == dict.fromkeys(
        seen - {"writeback-tests"}, Role.CONTROLLER
    )


def test_a_new_commit_is_applied_at_its_revision(applied: FluxSync, controlplane: ControlPlane, namespace: str) -> None:
    sha = applied.push({"app/config.yaml": CONFIGMAP.replace("level: info", "level: debug")}, "debug logs")
    ks = applied.wait_applied(sha)
    assert re.fullmatch(r"main@sha1:[0-9a-f]{40}", ks["status"]["lastAppliedRevision"])
    assert ks["status"]["lastAppliedRevision"] == f"main@sha1:{sha}"
    assert applied.git_repository()["status"]["artifact"]["revision"] == f"main@sha1:{sha}"
    assert _configmap(controlplane, namespace)["data"] == {"level": "debug"}


def test_kubectl_edit_is_reverted_on_the_next_interval(
    applied: FluxSync, controlplane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR)
    edited = json.loads(
        controlplane.kubectl(
            "edit", "configmap", "app-config", "-n", namespace, "-o", "json", "--show-managed-fields",
            env={"KUBE_EDITOR": f"{sys.executable} {editor}"},
        ).stdout
    )  # fmt: skip
    assert edited["data"]["hotfix"] == "added by kubectl edit"
    assert ("kubectl-edit", "Update") in _managers(edited)

    def reverted() -> bool:
        live = _configmap(controlplane, namespace)
        return "hotfix" not in live["data"]

    took = wait_until("kustomize-controller reverting the kubectl edit", reverted, timeout=3 * INTERVAL + 5)
    print(f"edit to revert: {took:.1f}s")  # shown with -rP; measured figures are in docs/flux-tests.md
    live = _configmap(controlplane, namespace)
    assert live["data"] == {"level": "info"}
    assert _managers(live) == [("kustomize-controller", "Apply")]  # the kubectl-edit entry is gone too


def test_a_suspended_kustomization_keeps_the_edit_and_resuming_reverts_it_at_once(
    applied: FluxSync, controlplane: ControlPlane, namespace: str
) -> None:
    applied.suspend()
    time.sleep(1)  # let a reconcile that was already running when the suspension landed finish
    patch = json.dumps({"data": {"hotfix": "added by kubectl patch"}})
    patched = json.loads(
        controlplane.kubectl(
            "patch",
            "configmap",
            "app-config",
            "-n",
            namespace,
            "--type=merge",
            "-p",
            patch,
            "-o",
            "json",
            "--show-managed-fields",
        ).stdout
    )
    assert ("kubectl-patch", "Update") in _managers(patched)

    time.sleep(2 * INTERVAL + 2)  # two intervals and then some
    live = _configmap(controlplane, namespace)
    assert live["data"]["hotfix"] == "added by kubectl patch"
    assert ("kubectl-patch", "Update") in _managers(live)

    applied.resume()
    took = wait_until(
        "kustomize-controller reverting the edit after resume",
        lambda: "hotfix" not in _configmap(controlplane, namespace)["data"],
        timeout=INTERVAL - 1,  # sooner than the interval: resuming reconciles at once
    )
    print(f"resume to revert: {took:.1f}s")
    assert _managers(_configmap(controlplane, namespace)) == [("kustomize-controller", "Apply")]


def test_flux_objects_without_the_watch_label_are_left_alone(
    flux_sync: SyncMaker, namespace: str, git_remote: Any, k8s: Any
) -> None:
    from kubernetes import client

    api = client.CustomObjectsApi(k8s)
    plain = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "plain-fixture", "namespace": namespace},
        "spec": {"interval": "5s", "prune": True, "sourceRef": {"kind": "GitRepository", "name": "absent"}},
    }
    api.create_namespaced_custom_object(
        *KUSTOMIZATION[:2], namespace, KUSTOMIZATION[2], plain, field_manager="writeback-tests"
    )
    sync = flux_sync(namespace=namespace, remote=git_remote, target_namespace=namespace)
    sync.wait_applied(sync.push({"app/config.yaml": CONFIGMAP}, "app config"))  # the controller is busy here
    left: Any = api.get_namespaced_custom_object(*KUSTOMIZATION[:2], namespace, KUSTOMIZATION[2], "plain-fixture")
    assert left["status"] == {"observedGeneration": -1}  # the CRD's default: no controller wrote it
    assert "finalizers" not in left["metadata"]
    assert {e["manager"] for e in left["metadata"]["managedFields"]} == {"writeback-tests"}
    assert sync.kustomization()["metadata"]["labels"] == WATCH_LABEL
