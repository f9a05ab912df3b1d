"""A Kustomize overlay on the real control plane: the rendered objects at the Argo CD revision are Git's side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.drift.kustomize_repo import APP, IMAGE, KUSTOMIZATION, OVERLAY, bump_image, make_repo
from tests.drift.support import by_path, diff_json, drifts_of
from tests.support.cli import run_cli
from writeback.adapters import kustomize as kustomize_cli

pytestmark = pytest.mark.controlplane

MODE = f"{APP}.env[name=MODE].value"


def test_overlay_at_the_argocd_revision_on_the_real_apiserver(
    controlplane: Any,
    namespace: str,
    crds: list[str],
    kustomize_bin: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(kustomize_cli.ENV_VAR, str(kustomize_bin))
    k = controlplane.kubectl
    repo = tmp_path / "gitops"
    v1 = make_repo(repo, namespace=namespace)
    # Argo CD (server-side sync) applies v1 as kustomize renders it
    k("apply", "--server-side", "--field-manager=argocd-controller", "-f", "-",
      input=kustomize_cli.build(repo / OVERLAY, binary=kustomize_bin))  # fmt: skip
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "project": "default",
            "source": {"repoURL": str(repo), "path": OVERLAY, "targetRevision": "main"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
        },
        "status": {"sync": {"status": "Synced", "revision": v1}},
    }
    k("apply", "--server-side", "--field-manager=argocd-controller", "-f", "-", input=json.dumps(app))
    v2 = bump_image(repo, namespace=namespace, tag="1.0.4")  # the release train's commit, not synced yet
    k("set", "env", "deployment/prod-web", "-n", namespace, "MODE=safe")  # the 3 AM hotfix
    flags = ("--repo", str(repo), "--path", OVERLAY, "--kubeconfig", controlplane.kubeconfig,
             "--argocd-app", f"{namespace}/web")  # fmt: skip

    _, doc = diff_json(*flags)

    assert doc["revision"] == v1 != v2 and doc["mode"] == "cluster"
    assert doc["problems"] == []
    (d,) = [d for d in doc["drifts"] if d["decision"] != "ignore"]
    assert d["resource"] == {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace, "name": "prod-web"}
    assert (d["path"], d["live"], d["git"], d["decision"]) == (MODE, "safe", "normal", "writeback")
    assert d["manager"] == "kubectl-set"
    web = by_path(drifts_of(doc, kind="Deployment", name="prod-web"))
    # image from images:, replicas from replicas:, memory from the patch: as rendered at v1, so not drift
    assert not {f"{APP}.image", "spec.replicas", f"{APP}.resources.limits.memory"} & set(web)
    assert drifts_of(doc, kind="ConfigMap", name="prod-settings") == []

    k("set", "image", "deployment/prod-web", "-n", namespace, f"app={IMAGE}:1.0.5")
    _, doc = diff_json(*flags)
    image = by_path(drifts_of(doc, kind="Deployment", name="prod-web"))[f"{APP}.image"]
    assert (image["git"], image["live"], image["decision"]) == (f"{IMAGE}:1.0.3", f"{IMAGE}:1.0.5", "pending")

    code, out, err = run_cli("plan", "-o", "json", *flags)
    assert code == 0, err
    (cs,) = json.loads(out)["changesets"]
    assert [(x["path"], x["decision"]) for x in cs["drifts"]] == [(MODE, "writeback")]
    text = "".join(f["diff"] for f in cs["files"])
    assert "value: safe" in text and "newTag" not in text and "1.0.5" not in text
    assert '"1.0.4"' in (repo / KUSTOMIZATION).read_text()
