"""FieldsV1 parsing: f:, k:{...}, v:, i: and "." into field paths with their owners."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.support import applied_fields, entry, k
from writeback.drift.ownership import parse_fields_v1, parse_managed_fields
from writeback.kube.paths import format_path, parse_path
from writeback.kube.pathtypes import Index
from writeback.model import FieldOwner, ManagerOperation

# A Deployment created with client-side `kubectl apply`, then scaled by the HPA through the scale
# subresource, with status written by kube-controller-manager: the shapes the API server produces.
CLIENT_SIDE_APPLY = entry(
    "kubectl-client-side-apply",
    {
        "f:metadata": {
            "f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
            "f:labels": {".": {}, "f:app": {}},
        },
        "f:spec": {
            "f:progressDeadlineSeconds": {},
            "f:revisionHistoryLimit": {},
            "f:selector": {},
            "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        k(name="web"): {
                            ".": {},
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:name": {},
                            "f:ports": {
                                ".": {},
                                k(containerPort=8080, protocol="TCP"): {
                                    ".": {},
                                    "f:containerPort": {},
                                    "f:protocol": {},
                                },
                            },
                            "f:resources": {},
                            "f:terminationMessagePath": {},
                        }
                    },
                    "f:dnsPolicy": {},
                },
            },
        },
    },
)
SCALE = entry(
    "kube-controller-manager", {"f:spec": {"f:replicas": {}}}, subresource="scale", time="2024-05-02T03:00:00Z"
)
STATUS = entry(
    "kube-controller-manager",
    {
        "f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}},
        "f:status": {"f:conditions": {".": {}, k(type="Available"): {".": {}, "f:status": {}, "f:type": {}}}},
    },
    subresource="status",
)


def body(*entries: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "managedFields": list(entries), **extra}}


@pytest.mark.parametrize(
    ("path", "manager", "subresource"),
    [
        ("spec.replicas", "kube-controller-manager", "scale"),
        ("spec.template.spec.containers[name=web].image", "kubectl-client-side-apply", ""),
        (
            "spec.template.spec.containers[name=web].ports[containerPort=8080,protocol=TCP].protocol",
            "kubectl-client-side-apply",
            "",
        ),
        ('metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]', "kubectl-client-side-apply", ""),
        ('metadata.annotations["deployment.kubernetes.io/revision"]', "kube-controller-manager", "status"),
        ("status.conditions[type=Available].status", "kube-controller-manager", "status"),
        ("spec.selector.matchLabels.app", "kubectl-client-side-apply", ""),  # an atomic map owned whole
    ],
)
def test_owner_of_a_leaf(path: str, manager: str, subresource: str) -> None:
    own = parse_managed_fields(body(CLIENT_SIDE_APPLY, SCALE, STATUS))
    owner = own.owner_of(parse_path(path))
    assert owner is not None
    assert (owner.manager, owner.subresource) == (manager, subresource)


def test_unowned_leaf_has_no_owner() -> None:
    own = parse_managed_fields(body(CLIENT_SIDE_APPLY, SCALE))
    assert own.present
    assert own.owner_of(parse_path("spec.template.spec.containers[name=web].terminationMessagePolicy")) is None
    assert own.owner_of(parse_path("spec.template.spec.containers[name=istio-proxy]"), subtree=True) is None


def test_operation_and_time_are_kept() -> None:
    own = parse_managed_fields(body(CLIENT_SIDE_APPLY, SCALE))
    assert own.owner_of(parse_path("spec.replicas")) == FieldOwner(
        manager="kube-controller-manager",
        operation=ManagerOperation.UPDATE,
        subresource="scale",
        time="2024-05-02T03:00:00Z",
    )


def test_whole_item_owner_comes_from_its_dot_marker() -> None:
    edit = entry(
        "kubectl-edit",
        {
            "f:spec": {
                "f:template": {
                    "f:spec": {
                        "f:containers": {
                            k(name="web"): {"f:env": {".": {}, k(name="NEW"): {".": {}, "f:name": {}, "f:value": {}}}}
                        }
                    }
                }
            }
        },
    )
    own = parse_managed_fields(body(CLIENT_SIDE_APPLY, edit))
    owner = own.owner_of(parse_path("spec.template.spec.containers[name=web].env[name=NEW]"), subtree=True)
    assert owner is not None and owner.manager == "kubectl-edit"


def test_list_keys_are_learned_from_k_entries() -> None:
    own = parse_managed_fields(body(CLIENT_SIDE_APPLY, STATUS))
    assert own.list_keys["spec.template.spec.containers"] == ("name",)
    assert own.list_keys["spec.template.spec.containers[*].ports"] == ("containerPort", "protocol")
    assert own.list_keys["status.conditions"] == ("type",)


def test_set_items_resolve_to_positions_in_live() -> None:
    live = {"metadata": {"finalizers": ["a.example.com/x", "b.example.com/y"]}}
    tree: dict[str, Any] = {"f:metadata": {"f:finalizers": {".": {}, 'v:"b.example.com/y"': {}, 'v:"not-in-live"': {}}}}
    entries = parse_fields_v1(tree, live=live)
    leaves = [format_path(e.path) for e in entries if e.leaf]
    assert leaves == ["metadata.finalizers[1]"]


def test_index_items_and_selector_values_as_text() -> None:
    ports: dict[str, Any] = {"i:0": {"f:port": {}}, k(port=80, protocol="TCP"): {"f:targetPort": {}}}
    tree: dict[str, Any] = {"f:spec": {"f:ports": ports}}
    paths = {format_path(e.path) for e in parse_fields_v1(tree) if e.leaf}
    assert paths == {"spec.ports[0].port", "spec.ports[port=80,protocol=TCP].targetPort"}
    assert parse_fields_v1({"f:a": {"i:2": {}}})[1].path[-1] == Index(2)


def test_malformed_keys_are_skipped_not_fatal() -> None:
    tree: dict[str, Any] = {"f:spec": {"k:not-json": {"f:x": {}}, "x:unknown": {}, "i:-1": {}, "f:ok": {}}}
    paths = [format_path(e.path) for e in parse_fields_v1(tree) if e.leaf]
    assert paths == ["spec.ok"]


def test_objects_without_managed_fields() -> None:
    assert not parse_managed_fields({"metadata": {"name": "x"}}).present
    assert parse_managed_fields({"metadata": {"name": "x"}}).owner_of(parse_path("spec.replicas")) is None


def test_shared_ownership_reports_the_latest_applier() -> None:
    first = entry("argocd-controller", applied_fields(), operation="Apply", time="2024-05-01T00:00:00Z")
    second = entry("kubectl", {"f:spec": {"f:replicas": {}}}, operation="Apply", time="2024-05-03T00:00:00Z")
    own = parse_managed_fields(body(first, second))
    assert {o.manager for o in own.owners_of(parse_path("spec.replicas"))} == {"argocd-controller", "kubectl"}
    owner = own.owner_of(parse_path("spec.replicas"))
    assert owner is not None and owner.manager == "kubectl"
