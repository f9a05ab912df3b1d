"""Fields that controllers and admission plugins fill are no person's change, with or without managedFields
(issue 9 §3 and §4), on the real apiserver and on dumps of it.

Git is synced as Argo CD does (server-side apply, manager ``argocd-controller``). Then the in-cluster writers do
what they do in a real cluster, with their own field managers (there is no controller-manager here): the ClusterRole
aggregation controller fills an aggregated ClusterRole's rules, cert-manager's cainjector injects CA bundles, the HPA
and KEDA scale through the scale subresource. Admission plugins that do run here add PV/PVC protection finalizers.
A person edits one Deployment. ``writeback diff`` runs against the cluster, against a ``--show-managed-fields`` dump
and against a plain ``kubectl get -o yaml`` dump (no managedFields, as kubectl prints by default).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.certs import Authority
from tests.drift.support import by_path, drifts_of, sync, write
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, init_repo
from tests.support.objects import deployment

pytestmark = pytest.mark.controlplane

CA = base64.b64encode(Authority.create(common_name="webhook-ca").pair.cert_pem).decode()  # what cainjector injects
ACTIONABLE = ("writeback", "flag", "unattributed")
MODE = "argocd-server-side"


@dataclass(kw_only=True)
class World:
    ns: str
    suffix: str
    repo: Path
    docs: dict[str, dict[str, Any]]  # "cluster", "dump" (with managedFields), "bare" (without)
    bare_dir: Path


def _names(suffix: str) -> dict[str, str]:
    return {
        "role": f"wb-aggregated-{suffix}",
        "webhook": f"wb-webhook-{suffix}",
        "crd": f"widgets{suffix}.wb.example.com",
        "apiservice": f"v1alpha1.wb{suffix}.example.com",
        "pv": f"wb-pv-{suffix}",
    }


def _manifests(ns: str, suffix: str) -> dict[str, dict[str, Any]]:
    n = _names(suffix)
    service_ref = {"name": "webhook", "namespace": ns, "path": "/validate"}
    inject = {"cert-manager.io/inject-ca-from": f"{ns}/webhook-cert"}
    return {
        "role.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": n["role"]},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"wb-aggregate-to": suffix}}]},
        },
        "webhook.yaml": {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": n["webhook"], "annotations": inject},
            "webhooks": [
                {
                    "name": "validate.wb.example.com",
                    "clientConfig": {"service": service_ref},
                    "rules": [
                        {
                            "apiGroups": ["wb.example.com"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["nothing"],
                        }
                    ],
                    "failurePolicy": "Ignore",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "namespaceSelector": {"matchLabels": {"wb-never": "true"}},
                }
            ],
        },
        "crd.yaml": {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": n["crd"], "annotations": inject},
            "spec": {
                "group": "wb.example.com",
                "names": {"plural": f"widgets{suffix}", "singular": f"widget{suffix}", "kind": f"Widget{suffix}"},
                "scope": "Namespaced",
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    }
                ],
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"service": service_ref}},
                },
            },
        },
        "apiservice.yaml": {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": n["apiservice"], "annotations": inject},
            "spec": {
                "group": f"wb{suffix}.example.com",
                "version": "v1alpha1",
                "groupPriorityMinimum": 100,
                "versionPriority": 10,
                "service": {"name": "api", "namespace": ns},
            },
        },
        "storage.yaml": {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": n["pv"]},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/tmp/wb"},
                "storageClassName": "manual",
            },
        },
        "claim.yaml": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "manual",
            },
        },
        "headless.yaml": {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "headless"},
            "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]},
        },
        "web-hpa.yaml": deployment("web-hpa", replicas=3),
        "hpa.yaml": {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web-hpa"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web-hpa"},
                "minReplicas": 3,
                "maxReplicas": 50,
            },
        },
        "web-keda.yaml": deployment("web-keda", replicas=2),
        "scaledobject.yaml": {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": "web-keda"},
            "spec": {
                "scaleTargetRef": {"name": "web-keda"},
                "triggers": [{"type": "cpu", "metadata": {"value": "60"}}],
            },
        },
        "web-empty.yaml": deployment("web-empty", env={"EMPTY": ""}),
        "web-person.yaml": deployment("web-person"),
    }


@pytest.fixture(scope="module")
def world(controlplane: Any, crds: list[str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("controller-filled")
    suffix = uuid.uuid4().hex[:6]
    ns = f"wb-filled-{suffix}"
    k = controlplane.kubectl
    k("create", "namespace", ns)
    repo = tmp / "gitops"
    init_repo(repo)
    files = [write(repo, f"apps/{name}", body) for name, body in _manifests(ns, suffix).items()]
    commit(repo, "apps")
    sync(controlplane, MODE, ns, *files)
    n = _names(suffix)

    def patch(resource: str, body: Any, *, manager: str, kind: str = "json", ns_flag: bool = False) -> None:
        where = ("-n", ns) if ns_flag else ()
        k("patch", resource, *where, f"--type={kind}", "-p", json.dumps(body), f"--field-manager={manager}")

    # the aggregation controller fills the rules of the aggregated ClusterRole
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    patch(f"clusterrole/{n['role']}", {"rules": rules}, manager="clusterrole-aggregation-controller", kind="merge")
    # cert-manager's cainjector injects the CA
    add_ca = [{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": CA}]
    patch(f"validatingwebhookconfiguration/{n['webhook']}", add_ca, manager="cert-manager-cainjector")
    crd_ca = [{"op": "add", "path": "/spec/conversion/webhook/clientConfig/caBundle", "value": CA}]
    patch(f"crd/{n['crd']}", crd_ca, manager="cert-manager-cainjector")
    patch(f"apiservice/{n['apiservice']}", {"spec": {"caBundle": CA}}, manager="cainjector", kind="merge")
    # the HPA and KEDA scale through the scale subresource
    for name, replicas in (("web-hpa", 7), ("web-keda", 5)):
        k(
            "patch",
            f"deployment/{name}",
            "-n",
            ns,
            "--subresource=scale",
            "--type=merge",
            "-p",
            json.dumps({"spec": {"replicas": replicas}}),
            "--field-manager=kube-controller-manager",
        )
    # a person's hotfix
    k("set", "env", "deployment/web-person", "-n", ns, "HOTFIX=1")

    dump, bare = tmp / "dump", tmp / "bare"
    dump.mkdir()
    bare.mkdir()
    cluster_kinds = "clusterroles,validatingwebhookconfigurations,crds,apiservices,persistentvolumes"
    names = [
        f"clusterrole/{n['role']}",
        f"validatingwebhookconfiguration/{n['webhook']}",
        f"crd/{n['crd']}",
        f"apiservice/{n['apiservice']}",
        f"pv/{n['pv']}",
    ]
    assert cluster_kinds.count(",") == len(names) - 1
    for out, extra in ((dump, ("--show-managed-fields",)), (bare, ())):
        (out / "cluster.yaml").write_text(k("get", *names, "-o", "yaml", *extra).stdout)
        spaced = k("get", "deploy,svc,pvc,hpa,scaledobjects.keda.sh", "-n", ns, "-o", "yaml", *extra).stdout
        (out / "namespaced.yaml").write_text(spaced)
    docs = {
        "cluster": _diff(repo, ns, "--kubeconfig", controlplane.kubeconfig),
        "dump": _diff(repo, ns, "--live", str(dump)),
        "bare": _diff(repo, ns, "--live", str(bare)),
    }
    yield World(ns=ns, suffix=suffix, repo=repo, docs=docs, bare_dir=bare)
    k("delete", *names, "--wait=false", check=False)
    k("delete", "namespace", ns, "--wait=false", check=False)


def _diff(repo: Path, ns: str, *args: str) -> dict[str, Any]:
    code, out, err = run_cli("diff", "--repo", str(repo), "--namespace", ns, "--output", "json", "--explain", *args)
    assert code == 0, out + err
    doc: dict[str, Any] = json.loads(out)
    return doc


@pytest.fixture(params=["cluster", "dump", "bare"])
def doc(request: pytest.FixtureRequest, world: World) -> dict[str, Any]:
    return world.docs[str(request.param)]


def _actionable(doc: dict[str, Any], kind: str, name: str) -> list[dict[str, Any]]:
    return [d for d in drifts_of(doc, kind=kind, name=name) if d["decision"] in ACTIONABLE]


def test_rules_of_an_aggregated_clusterrole_are_the_controllers(doc: dict[str, Any], world: World) -> None:
    name = _names(world.suffix)["role"]
    found = drifts_of(doc, kind="ClusterRole", name=name)
    assert found and all(d["path"].startswith("rules") for d in found), found
    assert all(d["decision"] == "ignore" and "aggregation" in d["reason"] for d in found), found
    # the aggregation controller's ownership where managedFields show it, else the aggregationRule's evidence
    assert {d["rule"] for d in found} <= {"aggregated", "controller-owned"}, found


@pytest.mark.parametrize(
    ("kind", "key", "path"),
    [
        ("ValidatingWebhookConfiguration", "webhook", 'webhooks[name="validate.wb.example.com"].clientConfig.caBundle'),
        ("CustomResourceDefinition", "crd", "spec.conversion.webhook.clientConfig.caBundle"),
        ("APIService", "apiservice", "spec.caBundle"),
    ],
)
def test_injected_ca_bundles_are_the_injectors(
    doc: dict[str, Any], world: World, kind: str, key: str, path: str
) -> None:
    found = by_path(drifts_of(doc, kind=kind, name=_names(world.suffix)[key]))
    assert path in found, found
    assert found[path]["decision"] == "ignore", found[path]
    assert found[path]["rule"] == "ca-injected", found[path]
    assert "cainjector" in found[path]["reason"] or "inject-ca-from" in found[path]["reason"]
    assert not _actionable(doc, kind, _names(world.suffix)[key])


def test_protection_finalizers_and_a_headless_service_are_no_drift(doc: dict[str, Any], world: World) -> None:
    assert not _actionable(doc, "PersistentVolume", _names(world.suffix)["pv"])
    assert not _actionable(doc, "PersistentVolumeClaim", "data")
    assert drifts_of(doc, kind="Service", name="headless") == []  # clusterIP: None in Git is compared, and equal


def test_an_empty_string_the_server_does_not_store_is_no_drift(doc: dict[str, Any]) -> None:
    assert drifts_of(doc, kind="Deployment", name="web-empty") == []


@pytest.mark.parametrize(("name", "scaler"), [("web-hpa", "HorizontalPodAutoscaler"), ("web-keda", "ScaledObject")])
def test_autoscaled_replicas_belong_to_the_autoscaler(doc: dict[str, Any], name: str, scaler: str) -> None:
    replicas = by_path(drifts_of(doc, kind="Deployment", name=name))["spec.replicas"]
    assert replicas["decision"] == "ignore", replicas
    assert scaler in replicas["reason"] or "kube-controller-manager" in replicas["reason"]
    assert replicas["rule"] in ("autoscaled", "controller-owned"), replicas
    assert not _actionable(doc, "Deployment", name)


def test_without_managed_fields_a_person_change_is_unattributed(world: World) -> None:
    env = "spec.template.spec.containers[name=app].env[name=HOTFIX]"
    assert by_path(drifts_of(world.docs["cluster"], kind="Deployment", name="web-person"))[env]["decision"] == (
        "writeback"
    )
    assert by_path(drifts_of(world.docs["dump"], kind="Deployment", name="web-person"))[env]["decision"] == "writeback"
    bare = by_path(drifts_of(world.docs["bare"], kind="Deployment", name="web-person"))[env]
    assert bare["decision"] == "unattributed" and bare["manager"] is None
    assert "--show-managed-fields" in world.docs["bare"]["notes"][0]


def test_unattributed_is_said_first_and_written_back_only_by_policy(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--repo", str(world.repo), "--namespace", world.ns, "--live", str(world.bare_dir)]
    code, out, err = run_cli("diff", *args, "--exit-code")
    assert code == 1, err  # unattributed drift is drift for a CI gate
    first = err.splitlines()[0]  # said first, on stderr
    assert first.startswith("writeback: warning: ") and "--show-managed-fields" in first
    config = tmp_path / "writeback.yaml"
    config.write_text(
        json.dumps(
            {
                "targets": [
                    {
                        "name": "shop",
                        "repo_url": str(world.repo),
                        "namespace": world.ns,
                        "policy": {"write_unattributed": True},
                    }
                ]
            }
        )
    )
    code, out, err = run_cli("diff", "--config", str(config), "--live", str(world.bare_dir), "-o", "json")
    assert code == 0, err
    env = "spec.template.spec.containers[name=app].env[name=HOTFIX]"
    assert by_path(drifts_of(json.loads(out), kind="Deployment", name="web-person"))[env]["decision"] == "writeback"


# ---------------------------------------------------------------- the ServiceAccount admission plugin


@pytest.fixture(scope="module")
def sa_plane() -> Iterator[Any]:
    """A second control plane that runs the ServiceAccount admission plugin, as real clusters do."""
    from tests.controlplane import cp

    try:
        plane = cp.start(service_account_admission=True)
    except cp.ControlPlaneError as exc:
        pytest.fail(f"the control plane with ServiceAccount admission could not start: {exc}", pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


def test_the_service_account_token_volume_is_the_admission_plugins(sa_plane: Any, tmp_path: Path) -> None:
    k = sa_plane.kubectl
    k("create", "namespace", "shop")
    k("create", "serviceaccount", "default", "-n", "shop")  # no controller-manager creates it here
    repo = tmp_path / "gitops"
    init_repo(repo)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "debug", "namespace": "shop"},
        "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]},
    }
    path = write(repo, "apps/pod.yaml", pod)
    commit(repo, "pod")
    k("apply", "--server-side", "--field-manager=argocd-controller", "-f", str(path))
    live = json.loads(k("get", "pod", "debug", "-n", "shop", "-o", "json").stdout)
    volumes = [v["name"] for v in live["spec"]["volumes"]]
    assert any(v.startswith("kube-api-access-") for v in volumes), volumes  # the plugin really added it
    (tmp_path / "bare.yaml").write_text(k("get", "pod", "debug", "-n", "shop", "-o", "yaml").stdout)
    for args in (("--kubeconfig", sa_plane.kubeconfig), ("--live", str(tmp_path / "bare.yaml"))):
        doc = _diff(repo, "shop", *args)
        found = drifts_of(doc, kind="Pod", name="debug")
        assert not [d for d in found if d["decision"] in ACTIONABLE], found
        token = [d for d in found if "kube-api-access-" in d["path"]]
        assert token and all("ServiceAccount admission" in d["reason"] for d in token), token
        assert {d["rule"] for d in token} == {"service-account-token"}, token
