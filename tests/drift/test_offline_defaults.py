"""Offline, on dumps of the real apiserver: what the server fills in is no drift (issue 9 §2), and objects are
matched as the API names them (§5): a cluster-scoped custom resource without a namespace, a dumped object
without one in the namespace Git's objects get.

Git is applied as Argo CD's server-side sync does, a person changes two things with real kubectl, then the objects
are dumped with ``kubectl get -o yaml`` (with and without ``--show-managed-fields``) and ``writeback diff --live``
compares them with the repo, without any cluster.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.drift.support import sync, write
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, init_repo
from tests.support.objects import deployment

pytestmark = pytest.mark.controlplane


def _webhooks(kind: str, name: str) -> dict[str, Any]:
    # Rules for a resource nobody serves: the hook is never called, so it cannot fail other requests.
    hook = {
        "name": f"{name}.writeback.test",
        "clientConfig": {"service": {"namespace": "default", "name": "nowhere"}},
        "rules": [
            {
                "apiGroups": ["nothing.writeback.test"],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["nothings"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [hook],
    }


def _crd(group: str) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Cluster",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
        },
    }


@pytest.fixture(scope="module")
def dumps(controlplane: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    k = controlplane.kubectl
    tmp = tmp_path_factory.mktemp("offline-defaults")
    uid = uuid.uuid4().hex[:8]
    ns, name, group = f"wb-defaults-{uid}", f"wb-defaults-{uid}", f"d{uid}.writeback.test"
    k("create", "namespace", ns)
    repo = tmp / "gitops"
    init_repo(repo)
    web = deployment("web")
    container = web["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]
    container["readinessProbe"] = {"httpGet": {"port": 8080}}
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {
            "type": "NodePort",
            "sessionAffinity": "ClientIP",
            "selector": {"app": "web"},
            "ports": [{"port": 80}],
        },
    }
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/srv/data"}},
    }
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "strict"}}
    namespaced = [write(repo, "apps/web.yaml", web, svc), write(repo, "apps/settings.yaml", cm)]
    cluster = [
        write(
            repo,
            "cluster/webhooks.yaml",
            _webhooks("MutatingWebhookConfiguration", name),
            _webhooks("ValidatingWebhookConfiguration", name),
        ),
        write(repo, "cluster/pv.yaml", pv),
        write(repo, "cluster/crd.yaml", _crd(group)),
    ]
    gadget = write(
        repo,
        "cluster/gadget.yaml",
        {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 1}},
    )
    commit(repo, "apps")
    sync(controlplane, "argocd-server-side", ns, *namespaced, *cluster)
    k("wait", "--for=condition=Established", "--timeout=60s", f"crd/gadgets.{group}")
    sync(controlplane, "argocd-server-side", ns, gadget)
    # the person's two changes
    k("set", "env", "deployment/web", "-n", ns, "NEW_FLAG=true")
    k("patch", f"gadgets.{group}", "g", "--type=merge", "-p", '{"spec":{"size":2}}')

    out: dict[str, Any] = {"ns": ns, "repo": repo, "name": name}
    objects = (
        ["deployment/web", "service/web", "configmap/settings", "-n", ns],
        [
            f"mutatingwebhookconfiguration/{name}",
            f"validatingwebhookconfiguration/{name}",
            f"pv/{name}",
            f"crd/gadgets.{group}",
            f"gadgets.{group}/g",
        ],
    )
    for flavour, extra in (("full", ["--show-managed-fields"]), ("bare", [])):
        d = tmp / flavour
        d.mkdir()
        for i, args in enumerate(objects):
            (d / f"{i}.yaml").write_text(k("get", *args, "-o", "yaml", *extra).stdout)
        out[flavour] = d
    # a dump whose ConfigMap names no namespace (a hand-made or tool-made dump)
    y = YAML()
    listed = y.load((out["full"] / "0.yaml").read_text())
    for item in listed["items"]:
        if item["kind"] == "ConfigMap":
            del item["metadata"]["namespace"]
    with (out["full"] / "0.yaml").open("w") as f:
        y.dump(listed, f)
    yield out
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration", "pv"):
        k("delete", kind, name, "--wait=false", check=False)
    k("delete", f"crd/gadgets.{group}", "--wait=false", check=False)
    k("delete", "namespace", ns, "--wait=false", check=False)


def _diff(capsys: pytest.CaptureFixture[str], dumps: dict[str, Any], flavour: str) -> dict[str, Any]:
    code, out, err = run_cli(
        "diff",
        "--repo",
        str(dumps["repo"]),
        "--live",
        str(dumps[flavour]),
        "-n",
        dumps["ns"],
        "--output",
        "json",
    )
    assert code in (0, 1), err
    doc: dict[str, Any] = json.loads(out)
    return doc


@pytest.mark.parametrize("flavour", ["full", "bare"])
def test_only_the_persons_changes_are_drift(
    capsys: pytest.CaptureFixture[str], dumps: dict[str, Any], flavour: str
) -> None:
    doc = _diff(capsys, dumps, flavour)
    got = {(d["resource"]["kind"], d["resource"]["name"], d["path"], d["op"]) for d in doc["drifts"]}
    assert got == {
        ("Deployment", "web", "spec.template.spec.containers[name=app].env[name=NEW_FLAG]", "add"),
        ("Gadget", "g", "spec.size", "change"),  # matched without a namespace: its CRD says Cluster
    }
    gadget = next(d for d in doc["drifts"] if d["resource"]["kind"] == "Gadget")
    assert gadget["resource"].get("namespace") is None and (gadget["live"], gadget["git"]) == (2, 1)
    if flavour == "full":
        assert {d["decision"] for d in doc["drifts"]} == {"writeback"}
        assert {d["manager"] for d in doc["drifts"]} == {"kubectl-set", "kubectl-patch"}


def test_what_the_server_filled_in_is_dropped_by_the_generated_table(
    capsys: pytest.CaptureFixture[str], dumps: dict[str, Any]
) -> None:
    # The live objects really hold the defaults that the hand-written table lacked (issue 9 §2).
    pairs: set[tuple[str, str]] = set()
    for p in sorted(Path(dumps["full"]).glob("*.yaml")):
        _pairs(YAML(typ="safe").load(p.read_text()), pairs)
    for key, value in (
        ("matchPolicy", "Equivalent"),
        ("reinvocationPolicy", "Never"),
        ("scope", "*"),
        ("port", 443),
        ("divisor", "0"),
        ("volumeMode", "Filesystem"),
        ("type", ""),
        ("timeoutSeconds", 10800),
    ):
        assert (key, json.dumps(value)) in pairs, (key, value)
    code, out, err = run_cli(
        "diff", "--repo", str(dumps["repo"]), "--live", str(dumps["full"]), "-n", dumps["ns"], "--explain"
    )
    assert code in (0, 1), err
    assert "defaulted by the API server (built-in defaults table)" in out


def _pairs(node: Any, out: set[tuple[str, str]]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(v, dict | list):
                out.add((str(k), json.dumps(v)))
            _pairs(v, out)
    elif isinstance(node, list):
        for v in node:
            _pairs(v, out)
