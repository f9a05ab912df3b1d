"""Flux's drift ignore rules on the real kustomize-controller v1.9.6 (issue 22 §2): the Kustomization's
``spec.ignore`` is served by its CRD, kustomize-controller leaves an ignored field alone live (and reverts the rest),
and ``writeback diff`` reads the rule from the live Kustomization: the ignored field is ``ignore`` by the rule
``flux-ignore``, a change elsewhere, or on an object the rule's label selector does not select, is a write-back."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.cp import ControlPlane
from tests.drift.support import by_path, diff_json, drifts_of, to_yaml
from tests.flux.fixtures import SyncMaker
from tests.flux.sync import FluxSync
from tests.support.objects import deployment
from tests.support.polling import stays, wait_until

pytestmark = [pytest.mark.controlplane, pytest.mark.flux]

INTERVAL = 5.0
CRD = Path(__file__).resolve().parents[1] / "data" / "crds" / "flux-kustomization.yaml"
RULE = {
    "paths": ["/spec/replicas"],
    "target": {"kind": "Deployment", "labelSelector": "app.kubernetes.io/part-of=shop"},
}
ENV = "spec.template.spec.containers[name=app].env[name=LOG_LEVEL]"


def _manifest(name: str, part_of: str) -> str:
    body = deployment(name, replicas=2)
    body["metadata"]["labels"]["app.kubernetes.io/part-of"] = part_of
    return to_yaml(body)


def _get(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    out = plane.kubectl("get", "deployment", name, "-n", namespace, "-o", "json", "--show-managed-fields")
    got: dict[str, Any] = json.loads(out.stdout)
    return got


def _env(obj: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in obj["spec"]["template"]["spec"]["containers"][0].get("env") or ()}


def _decisions(plane: ControlPlane, sync: FluxSync, work: Path) -> dict[str, dict[str, dict[str, Any]]]:
    _, doc = diff_json("--repo", str(work), "--path", "app", "--kubeconfig", plane.kubeconfig, "--explain",
                       "--flux-kustomization", f"{sync.namespace}/{sync.name}")  # fmt: skip
    return {name: by_path(drifts_of(doc, kind="Deployment", name=name)) for name in ("web", "api")}


def test_the_crd_of_the_tested_version_declares_spec_ignore() -> None:
    """tests/data/crds/flux-kustomization.yaml is byte for byte kustomize-controller v1.9.6's CRD (the version
    tests/flux/build builds): its v1 schema has IgnoreRule, paths and a target of seven selector fields."""
    from ruamel.yaml import YAML

    crd = YAML(typ="safe").load(CRD.read_text())
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    ignore = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["ignore"]
    rule = ignore["items"]
    assert ignore["type"] == "array" and rule["required"] == ["paths"]
    assert rule["properties"]["paths"] == {**rule["properties"]["paths"], "type": "array", "items": {"type": "string"}}
    target = rule["properties"]["target"]["properties"]
    assert set(target) == {"group", "version", "kind", "name", "namespace", "labelSelector", "annotationSelector"}
    assert {f["type"] for f in target.values()} == {"string"}


def test_flux_leaves_an_ignored_field_alone_and_writeback_does_not_propose_it(
    flux_sync: SyncMaker, controlplane: ControlPlane, namespace: str, git_remote: Any
) -> None:
    sync = flux_sync(namespace=namespace, remote=git_remote, interval=f"{INTERVAL:.0f}s", target_namespace=namespace)
    sha = sync.push({"app/web.yaml": _manifest("web", "shop"), "app/api.yaml": _manifest("api", "other")}, "apps")
    sync.wait_applied(sha)
    sync.set_ignore([RULE])
    # the API server prunes fields its CRD does not declare: the rule is kept, so v1.9.6's schema has spec.ignore
    assert sync.kustomization()["spec"]["ignore"] == [RULE]
    sync.wait_applied(sha)  # Ready at the new generation: kustomize-controller took the rule

    sync.suspend()
    time.sleep(1)  # let a reconcile that was already running finish
    k = controlplane.kubectl
    k("scale", "deployment/web", "-n", namespace, "--replicas=4")  # ignored by the rule
    k("scale", "deployment/api", "-n", namespace, "--replicas=4")  # not selected by its label selector
    k("set", "env", "deployment/web", "-n", namespace, "-c", "app", "LOG_LEVEL=debug")  # elsewhere

    found = _decisions(controlplane, sync, git_remote.work)
    web, api = found["web"], found["api"]
    assert (web["spec.replicas"]["decision"], web["spec.replicas"]["rule"]) == ("ignore", "flux-ignore")
    where = f"Flux Kustomization {namespace}/{sync.name} spec.ignore[0]"
    assert web["spec.replicas"]["reason"] == f"{where} ignores /spec/replicas"
    assert (web[ENV]["decision"], web[ENV]["live"]) == ("writeback", {"name": "LOG_LEVEL", "value": "debug"})
    assert (api["spec.replicas"]["decision"], api["spec.replicas"]["manager"]) == ("writeback", "kubectl")

    # what Flux does with them: it reverts what writeback would write back, and leaves the ignored field alone
    sync.resume()
    wait_until(
        "kustomize-controller reverting the env",
        lambda: "LOG_LEVEL" not in _env(_get(controlplane, namespace, "web")),
        timeout=3 * INTERVAL + 5,
        step=0.2,
    )
    wait_until(
        "kustomize-controller reverting the replicas its rule does not select",
        lambda: _get(controlplane, namespace, "api")["spec"]["replicas"] == 2,
        timeout=3 * INTERVAL + 5,
        step=0.2,
    )
    stays(  # two reconcile intervals and then some
        "Flux reverted an ignored field",
        lambda: _get(controlplane, namespace, "web")["spec"]["replicas"] == 4,
        seconds=2 * INTERVAL + 1,
        step=0.5,
    )
    assert sync.kustomization()["status"]["lastAppliedRevision"] == sync.revision(sha)

    found = _decisions(controlplane, sync, git_remote.work)
    assert {p: d["decision"] for p, d in found["web"].items()} == {"spec.replicas": "ignore"}
    assert found["web"]["spec.replicas"]["rule"] == "flux-ignore"
    assert found["api"] == {}
