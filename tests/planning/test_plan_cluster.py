"""``writeback plan`` against the real kube-apiserver: a person's kubectl changes become minimal diffs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import writeback.cli
from tests.support.objects import web_manifest


def manifest_text(namespace: str) -> str:
    """The web Deployment (Argo CD's comment, an env) and a ConfigMap, in one file."""
    web = web_manifest(
        comment="web: synced by Argo CD",
        namespace=namespace,
        replicas=2,
        image="registry.example.com/web:1.0.0 # release 1.0",
        env={"MODE": "normal"},
    )
    return f"""{web}---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: {namespace}
data:
  color: blue
"""


@pytest.mark.controlplane
def test_plan_in_cluster_mode(controlplane: Any, namespace: str, tmp_path: Path, capsys: Any) -> None:
    repo = tmp_path / "repo"
    (repo / "apps").mkdir(parents=True)
    manifest = repo / "apps" / "web.yaml"
    manifest.write_text(manifest_text(namespace))
    controlplane.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-f", str(manifest))
    image_patch = '[{"op": "replace", "path": "/spec/template/spec/containers/0/image", '
    image_patch += '"value": "registry.example.com/web:1.0.4"}]'
    controlplane.kubectl("patch", "deployment", "web", "-n", namespace, "--type=json", "-p", image_patch)
    controlplane.kubectl("patch", "configmap", "settings", "-n", namespace, "-p", '{"data": {"color": "red"}}')
    controlplane.kubectl("scale", "deployment", "web", "-n", namespace, "--replicas=4")
    before = manifest.read_bytes()

    capsys.readouterr()
    code = writeback.cli.main(
        ["plan", "--kubeconfig", controlplane.kubeconfig, "--repo", str(repo), "--path", "apps", "-o", "json"]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    (cs,) = json.loads(out.out)["changesets"]
    assert (cs["id"], cs["review"]) == ("apps", "standard")
    by_path = {d["path"]: d for d in cs["drifts"]}
    assert by_path["spec.template.spec.containers[name=app].image"]["manager"] == "kubectl-patch"
    assert by_path["data.color"]["live"] == "red"
    assert by_path["spec.replicas"]["manager"] == "kubectl"
    (file,) = cs["files"]
    changed = [x for x in file["diff"].splitlines() if x[:1] in "+-" and x[:3] not in ("+++", "---")]
    assert changed == [
        "-  replicas: 2",
        "+  replicas: 4",
        "-          image: registry.example.com/web:1.0.0 # release 1.0",
        "+          image: registry.example.com/web:1.0.4 # release 1.0",
        "-  color: blue",
        "+  color: red",
    ]
    assert manifest.read_bytes() == before
