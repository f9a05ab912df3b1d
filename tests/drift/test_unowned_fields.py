"""Issue 22 §3 on the real control plane: a field that Git declares and that no manager owns live is not a person's
change. A Deployment applied (server-side, as kustomize-controller applies) without ``replicas``, then Git changed to
``replicas: 2`` and not synced yet: the real kube-apiserver stores its default, 1, and records no manager for it.

- compared with Git that declares it (the head, no controller object): ``unattributed`` by the rule ``unowned``,
  and ``plan`` proposes nothing, with ``policy.write_unattributed`` too;
- following the Flux Kustomization that applied the older commit: not a write-back either (at that revision the 1 is
  the server's default, and the head's change is pending);
- a person's ``kubectl scale`` of those replicas (the scale subresource records no manager when nobody owned them)
  stays ``unattributed``, the same rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import by_path, diff_json, drifts_of, sync, write
from tests.support.cli import run_cli
from tests.support.gitrepos import commit
from tests.support.objects import deployment

pytestmark = pytest.mark.controlplane


@pytest.fixture
def not_synced(controlplane: Any, namespace: str, git_remote: Any) -> dict[str, str]:
    """v1 (no replicas) applied as kustomize-controller applies; v2 (replicas: 2) committed, not applied."""
    work = git_remote.work
    manifest = write(work, "apps/web.yaml", deployment("web", namespace=namespace))
    v1 = commit(work, "web")
    sync(controlplane, "flux-kustomize-controller", namespace, manifest)
    write(work, "apps/web.yaml", deployment("web", namespace=namespace, replicas=2))
    v2 = commit(work, "web: two replicas")
    git_remote.push()
    return {"v1": v1, "v2": v2}


def _live(controlplane: Any, namespace: str) -> dict[str, Any]:
    out = controlplane.kubectl("get", "deployment", "web", "-n", namespace, "-o", "json", "--show-managed-fields")
    got: dict[str, Any] = json.loads(out.stdout)
    return got


def _replicas_owners(live: dict[str, Any]) -> list[str]:
    return [e["manager"] for e in live["metadata"]["managedFields"] if '"f:replicas"' in json.dumps(e["fieldsV1"])]


def test_git_declares_replicas_nobody_owns_live_is_unattributed_never_written_back(
    not_synced: dict[str, str], controlplane: Any, namespace: str, git_remote: Any, tmp_path: Path
) -> None:
    live = _live(controlplane, namespace)
    assert live["spec"]["replicas"] == 1 and _replicas_owners(live) == []  # the real server's default, nobody's
    flags = ("--repo", str(git_remote.work), "--path", "apps", "--kubeconfig", controlplane.kubeconfig)

    _, doc = diff_json(*flags, "--explain")  # no controller object: the head, which declares replicas: 2
    assert doc["revision"] == not_synced["v2"]
    replicas = by_path(drifts_of(doc, kind="Deployment", name="web"))["spec.replicas"]
    assert (replicas["op"], replicas["live"], replicas["git"]) == ("change", 1, 2)
    assert (replicas["decision"], replicas["rule"], replicas.get("manager")) == ("unattributed", "unowned", None)
    assert "no manager owns it" in replicas["reason"]

    code, out, err = run_cli("plan", "-o", "json", *flags)
    assert code == 0, err
    assert json.loads(out)["changesets"] == []  # nothing would undo Git's replicas: 2

    config = tmp_path / "writeback.yaml"  # not even when unattributed changes are written back
    config.write_text(json.dumps({"targets": [{"name": "web", "repo_url": str(git_remote.work), "path": "apps",
                                               "namespace": namespace,
                                               "policy": {"write_unattributed": True}}]}))  # fmt: skip
    code, out, err = run_cli("plan", "-o", "json", "--config", str(config), "--repo", str(git_remote.work),
                             "--kubeconfig", controlplane.kubeconfig)  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["changesets"] == []


def test_following_the_kustomization_that_applied_the_older_commit_it_is_no_write_back_either(
    not_synced: dict[str, str], controlplane: Any, namespace: str, git_remote: Any, crds: list[str]
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
    status = json.dumps({"status": {"lastAppliedRevision": f"main@sha1:{not_synced['v1']}"}})
    k("patch", "kustomization.kustomize.toolkit.fluxcd.io", "web", "-n", namespace, "--subresource=status",
      "--type=merge", "-p", status)  # fmt: skip
    flags = ("--repo", str(git_remote.work), "--path", "apps", "--kubeconfig", controlplane.kubeconfig,
             "--flux-kustomization", f"{namespace}/web")  # fmt: skip

    _, doc = diff_json(*flags)
    assert doc["revision"] == not_synced["v1"]
    assert [d for d in drifts_of(doc, kind="Deployment", name="web") if d["path"] == "spec.replicas"] == []

    # a person scales meanwhile: the head changed replicas after the applied revision, so it is pending
    k("scale", "deployment/web", "-n", namespace, "--replicas=3")
    assert _replicas_owners(_live(controlplane, namespace)) == []  # a scale of replicas nobody owned: no manager
    _, doc = diff_json(*flags)
    replicas = by_path(drifts_of(doc, kind="Deployment", name="web"))["spec.replicas"]
    assert (replicas["live"], replicas["decision"]) == (3, "pending")
    code, out, err = run_cli("plan", "-o", "json", *flags)
    assert code == 0, err
    assert json.loads(out)["changesets"] == []


def test_a_scale_of_replicas_git_leaves_out_stays_unattributed_by_the_same_rule(
    controlplane: Any, namespace: str, git_remote: Any
) -> None:
    work = git_remote.work
    manifest = write(work, "apps/web.yaml", deployment("web", namespace=namespace))
    commit(work, "web")
    sync(controlplane, "flux-kustomize-controller", namespace, manifest)
    controlplane.kubectl("scale", "deployment/web", "-n", namespace, "--replicas=4")
    assert _replicas_owners(_live(controlplane, namespace)) == []

    _, doc = diff_json("--repo", str(work), "--path", "apps", "--kubeconfig", controlplane.kubeconfig, "--explain")
    replicas = by_path(drifts_of(doc, kind="Deployment", name="web"))["spec.replicas"]
    assert (replicas["op"], replicas["live"], replicas["decision"], replicas["rule"]) == (
        "add",
        4,
        "unattributed",
        "unowned",
    )
    assert "scale subresource" in replicas["reason"]
