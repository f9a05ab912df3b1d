"""Normalization drops server-populated fields and records the rule for each."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.support import defaulted_live, deployment_git
from writeback.drift.normalizing import normalize
from writeback.kube.paths import format_path, parse_path
from writeback.kube.quantities import values_equal
from writeback.kube.refs import ObjectRef
from writeback.model import Side

DEPLOY = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="shop", name="web")
SERVICE = ObjectRef(api_version="v1", kind="Service", namespace="shop", name="web")


def rules(body: dict[str, Any], ref: ObjectRef = DEPLOY, declared: dict[str, Any] | None = None) -> dict[str, str]:
    return {format_path(d.path): d.rule for d in normalize(body, ref=ref, side=Side.LIVE, declared=declared).dropped}


def test_server_metadata_status_and_bookkeeping_annotations() -> None:
    live = defaulted_live(deployment_git())
    live["metadata"]["managedFields"] = [{"manager": "x"}]
    live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    live["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"] = "app:apps/Deployment:shop/web"
    got = rules(live)
    assert got == {
        "status": "server-populated: status",
        "metadata.uid": "server-populated: metadata.uid",
        "metadata.resourceVersion": "server-populated: metadata.resourceVersion",
        "metadata.generation": "server-populated: metadata.generation",
        "metadata.creationTimestamp": "server-populated: metadata.creationTimestamp",
        "metadata.managedFields": "server-populated: metadata.managedFields",
        'metadata.annotations["deployment.kubernetes.io/revision"]': "server-populated: Deployment revision",
        'metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]': "client-side apply bookkeeping",
        'metadata.annotations["argocd.argoproj.io/tracking-id"]': "Argo CD resource tracking",
        "spec.template.metadata.creationTimestamp": "server-populated: template",
        "spec.template.spec.securityContext": "defaulted by the API server: empty pod securityContext",
    }
    out = normalize(live, ref=DEPLOY, side=Side.LIVE).body
    assert "annotations" not in out["metadata"]  # emptied by the drops
    assert "status" not in out and "uid" not in out["metadata"]
    assert out["spec"]["revisionHistoryLimit"] == 10  # defaults are not normalization's business


def test_empty_pod_security_context_goes_unless_git_declares_it_or_it_holds_something() -> None:
    pod = ObjectRef(api_version="v1", kind="Pod", namespace="shop", name="web-1")
    rule = "defaulted by the API server: empty pod securityContext"
    assert rules({"spec": {"securityContext": {}, "containers": []}}, ref=pod) == {"spec.securityContext": rule}
    live = defaulted_live(deployment_git())
    declared = deployment_git()
    declared["spec"]["template"]["spec"]["securityContext"] = {}
    assert "spec.template.spec.securityContext" not in rules(live, declared=declared)  # Git says so: compared
    live["spec"]["template"]["spec"]["securityContext"] = {"runAsNonRoot": True}
    assert "spec.template.spec.securityContext" not in rules(live)  # a person's value is never dropped
    assert normalize(live, ref=DEPLOY, side=Side.LIVE).body["spec"]["template"]["spec"]["securityContext"] == {
        "runAsNonRoot": True
    }


def test_controller_owner_references_go_other_references_stay() -> None:
    live = {
        "metadata": {
            "name": "web-1",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "1", "controller": True},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "2"},
            ],
        }
    }
    out = normalize(live, ref=DEPLOY, side=Side.LIVE)
    assert [r["name"] for r in out.body["metadata"]["ownerReferences"]] == ["keep"]
    assert [d.rule for d in out.dropped] == ["set by a controller: controller ownerReferences"]


@pytest.mark.parametrize(
    ("label", "declared", "dropped"),
    [
        ("app.kubernetes.io/instance", False, True),
        ("app.kubernetes.io/instance", True, False),  # Git declares it: compared like any label
        ("kustomize.toolkit.fluxcd.io/name", False, True),
        ("team", False, False),
    ],
)
def test_tool_labels_are_dropped_only_when_git_does_not_declare_them(label: str, declared: bool, dropped: bool) -> None:
    live = {"metadata": {"labels": {label: "shop", "app": "web"}}}
    git = {"metadata": {"labels": {label: "shop"} if declared else {"app": "web"}}}
    got = rules(live, declared=git)
    assert (f'metadata.labels["{label}"]' in got) is dropped


def test_service_allocations() -> None:
    live = {
        "spec": {
            "clusterIP": "10.0.0.12",
            "clusterIPs": ["10.0.0.12"],
            "type": "NodePort",
            "ports": [{"port": 80, "nodePort": 31234}, {"port": 443, "nodePort": 30443}],
        }
    }
    git = {"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443, "nodePort": 30443}]}}
    out = normalize(live, ref=SERVICE, side=Side.LIVE, declared=git)
    assert "clusterIP" not in out.body["spec"] and "clusterIPs" not in out.body["spec"]
    assert out.body["spec"]["ports"] == [{"port": 80}, {"port": 443, "nodePort": 30443}]  # Git's node port stays
    headless = normalize(
        {"spec": {"clusterIP": "None"}}, ref=SERVICE, side=Side.LIVE, declared={"spec": {"clusterIP": "None"}}
    )
    assert headless.body == {"spec": {"clusterIP": "None"}}


def test_git_side_keeps_what_git_declares() -> None:
    git = deployment_git()
    out = normalize(git, ref=DEPLOY, side=Side.GIT)
    assert out.dropped == ()
    assert out.body["metadata"] == {"labels": {"app": "web"}}  # identity (name, namespace) is not compared
    assert "apiVersion" not in out.body and "kind" not in out.body


def test_yaml_dates_compare_as_text() -> None:
    import datetime

    git = {"metadata": {"annotations": {"since": datetime.date(2024, 5, 1)}}}
    assert normalize(git, ref=DEPLOY, side=Side.GIT).body["metadata"]["annotations"]["since"] == "2024-05-01"


@pytest.mark.parametrize(
    ("a", "b", "path", "equal"),
    [
        ("500m", "0.5", "spec.containers[name=a].resources.limits.cpu", True),
        ("1Gi", "1024Mi", "spec.containers[name=a].resources.requests.memory", True),
        ("1G", "1Gi", "spec.containers[name=a].resources.requests.memory", False),
        ("500m", "0.5", "metadata.annotations.x", False),  # quantities only where Kubernetes parses them
        (True, 1, "spec.x", False),
        (1, 1.0, "spec.x", True),
        ("80", 80, "spec.x", False),
    ],
)
def test_values_equal(a: Any, b: Any, path: str, equal: bool) -> None:
    assert values_equal(a, b, path=parse_path(path)) is equal


def test_secret_string_data_is_compared_as_the_data_the_server_stores() -> None:
    secret = ObjectRef(api_version="v1", kind="Secret", namespace="shop", name="db")
    git = {"metadata": {"name": "db"}, "data": {"a": "eA=="}, "stringData": {"b": "pass", "a": "y"}}

    out = normalize(git, ref=secret, side=Side.GIT)

    assert out.body == {"data": {"a": "eQ==", "b": "cGFzcw=="}}
    assert [(format_path(x.path), x.rule) for x in out.dropped] == [
        ("stringData", "write-only: stored base64-encoded in data")
    ]
    assert git["stringData"] == {"b": "pass", "a": "y"}  # the input is not changed
