"""Lookups in the generated defaults data: which fields the API server fills in, inside what a person added too."""

from __future__ import annotations

from typing import Any

import pytest

from writeback.drift.evidence.defaults import (
    Filled,
    defaults_within,
    is_allocated,
    is_default,
    is_default_item,
    strip_defaults,
)
from writeback.kube.paths import format_path, parse_path
from writeback.kube.pathtypes import ABSENT

C = "spec.template.spec.containers[name=app]"

# (kind, path, value, parent, is it the default?)
IS_DEFAULT: list[tuple[str, str, Any, Any, bool]] = [
    ("Deployment", "spec.replicas", 1, {}, True),
    ("Deployment", "spec.replicas", 2, {}, False),
    ("Deployment", "spec.replicas", "1", {}, False),  # the type counts
    ("Deployment", f"{C}.imagePullPolicy", "IfNotPresent", {"image": "nginx:1.25"}, True),
    ("Deployment", f"{C}.imagePullPolicy", "Always", {"image": "nginx:1.25"}, False),
    ("Deployment", f"{C}.imagePullPolicy", "Always", {"image": "nginx"}, True),
    ("Deployment", f"{C}.imagePullPolicy", "Always", {"image": "registry.local:5000/app"}, True),
    ("Deployment", f"{C}.imagePullPolicy", "IfNotPresent", {"image": "nginx@sha256:" + "0" * 64}, True),
    ("Deployment", f"{C}.env[name=CPU].valueFrom.resourceFieldRef.divisor", "0", {}, True),
    ("Deployment", f"{C}.env[name=CPU].valueFrom.resourceFieldRef.divisor", "1m", {}, False),
    ("Deployment", f"{C}.livenessProbe.httpGet.path", "/", {}, True),
    ("Deployment", f"{C}.readinessProbe.grpc.service", "", {}, True),
    ("Deployment", "spec.template.spec.volumes[name=v].hostPath.type", "", {}, True),
    ("Deployment", "spec.template.spec.serviceAccountName", "default", {}, False),  # admission only fills Pods
    ("Pod", "spec.serviceAccountName", "default", {}, True),
    ("Pod", "spec.serviceAccount", "build", {"serviceAccountName": "build"}, True),
    ("Pod", "spec.serviceAccount", "build", {"serviceAccountName": "other"}, False),
    ("CronJob", "spec.jobTemplate.spec.backoffLimit", 6, {}, False),  # the server does not fill it in a template
    ("Service", "spec.ports[port=80,protocol=TCP].targetPort", 80, {"port": 80}, True),
    ("Service", "spec.ports[port=80,protocol=TCP].targetPort", 8080, {"port": 80}, False),
    ("Service", "spec.externalTrafficPolicy", "Cluster", {}, True),
    ("Service", "spec.sessionAffinityConfig.clientIP.timeoutSeconds", 10800, {}, True),
    ("Service", "spec.ipFamilies", ["IPv4"], {}, True),
    ("Service", "spec.clusterIP", "10.0.0.7", {}, False),  # allocated, not a default
    ("MutatingWebhookConfiguration", "webhooks[name=a.example.com].matchPolicy", "Equivalent", {}, True),
    ("MutatingWebhookConfiguration", "webhooks[name=a.example.com].matchPolicy", "Exact", {}, False),
    ("MutatingWebhookConfiguration", "webhooks[name=a.example.com].reinvocationPolicy", "Never", {}, True),
    ("MutatingWebhookConfiguration", "webhooks[name=a.example.com].timeoutSeconds", 10, {}, True),
    ("ValidatingWebhookConfiguration", "webhooks[name=a.example.com].rules[0].scope", "*", {}, True),
    ("ValidatingWebhookConfiguration", "webhooks[name=a.example.com].clientConfig.service.port", 443, {}, True),
    ("PersistentVolume", "spec.volumeMode", "Filesystem", {}, True),
    ("PersistentVolume", "spec.hostPath.type", "", {}, True),
    ("PersistentVolume", "spec.hostPath.type", "Directory", {}, False),
    ("PersistentVolumeClaim", "spec.storageClassName", "standard", {}, True),
    ("NetworkPolicy", "spec.policyTypes", ["Ingress"], {"ingress": [{}]}, True),
    ("NetworkPolicy", "spec.policyTypes", ["Ingress", "Egress"], {"egress": [{}]}, True),
    ("NetworkPolicy", "spec.policyTypes", ["Ingress", "Egress"], {"ingress": [{}]}, False),
    ("CustomResourceDefinition", "spec.names.singular", "widget", {"kind": "Widget"}, True),
    ("CustomResourceDefinition", "spec.names.listKind", "WidgetList", {"kind": "Widget"}, True),
    ("LimitRange", "spec.limits[0].default.cpu", "1", {}, False),  # needs the item: only defaults_within knows it
    ("Secret", "type", "Opaque", {}, True),
    ("Widget", "spec.replicas", 1, {}, False),  # not a built-in kind
]


@pytest.mark.parametrize(("kind", "path", "value", "parent", "expected"), IS_DEFAULT)
def test_is_default(kind: str, path: str, value: Any, parent: Any, expected: bool) -> None:
    assert is_default(kind=kind, path=parse_path(path), value=value, parent=parent) is expected


@pytest.mark.parametrize(
    ("kind", "path", "expected"),
    [
        ("Service", "spec.clusterIP", True),
        ("Service", "spec.clusterIPs", True),
        ("Service", "spec.ports[port=80,protocol=TCP].nodePort", True),
        ("Service", "spec.healthCheckNodePort", True),
        ("Job", 'spec.selector.matchLabels["batch.kubernetes.io/controller-uid"]', True),
        ("Service", "spec.ports[port=80,protocol=TCP].port", False),
        ("Deployment", "spec.clusterIP", False),
    ],
)
def test_is_allocated(kind: str, path: str, expected: bool) -> None:
    assert is_allocated(kind=kind, path=parse_path(path)) is expected


def test_default_list_items() -> None:
    not_ready = {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    }
    assert is_default_item(kind="Pod", path=parse_path("spec.tolerations[0]"), item=not_ready)
    assert not is_default_item(
        kind="Pod", path=parse_path("spec.tolerations[0]"), item=dict(not_ready, tolerationSeconds=60)
    )
    assert not is_default_item(kind="Deployment", path=parse_path("spec.template.spec.tolerations[0]"), item=not_ready)


PROBE = {
    "httpGet": {"path": "/", "port": 8080, "scheme": "HTTP"},
    "timeoutSeconds": 1,
    "periodSeconds": 10,
    "successThreshold": 1,
    "failureThreshold": 3,
}

# issue 15: what a person added live -> what they wrote (None: all of it was filled in by the server)
STRIP: list[tuple[str, str, Any, Any]] = [
    ("Deployment", f"{C}.livenessProbe", PROBE, {"httpGet": {"port": 8080}}),
    ("Deployment", f"{C}.livenessProbe", dict(PROBE, periodSeconds=5), {"httpGet": {"port": 8080}, "periodSeconds": 5}),
    (
        "Deployment",
        "spec.template.spec.initContainers[name=init]",
        {
            "name": "init",
            "image": "busybox:1.36",
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        },
        {"name": "init", "image": "busybox:1.36"},
    ),
    (
        "Deployment",
        f"{C}.ports[containerPort=9090,protocol=TCP]",
        {"containerPort": 9090, "protocol": "TCP"},
        {"containerPort": 9090},
    ),
    ("Service", "spec.sessionAffinityConfig", {"clientIP": {"timeoutSeconds": 10800}}, None),
    (
        "Service",
        "spec.sessionAffinityConfig",
        {"clientIP": {"timeoutSeconds": 60}},
        {"clientIP": {"timeoutSeconds": 60}},
    ),
    (
        "Service",
        "spec.ports[port=80,protocol=TCP]",
        {"port": 80, "targetPort": 80, "protocol": "TCP", "nodePort": 31234},
        {"port": 80},
    ),
    ("Deployment", "spec.strategy.rollingUpdate", {"maxSurge": "25%", "maxUnavailable": "25%"}, None),
    (
        "Deployment",
        "spec.template.spec.volumes[name=cfg]",
        {"name": "cfg", "configMap": {"name": "app", "defaultMode": 420}},
        {"name": "cfg", "configMap": {"name": "app"}},
    ),
    (
        "Deployment",
        "spec.template.spec.volumes[name=tmp]",
        {"name": "tmp", "emptyDir": {}},
        {"name": "tmp", "emptyDir": {}},
    ),
    (
        "Deployment",
        f"{C}.env[name=CPU]",
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "0"}}},
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
    ),
    (
        "HorizontalPodAutoscaler",
        "spec.behavior.scaleUp",
        {
            "selectPolicy": "Max",
            "stabilizationWindowSeconds": 0,
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        None,
    ),
    (
        "LimitRange",
        "spec.limits[0]",
        {"type": "Container", "max": {"cpu": "2"}, "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2"}},
        {"type": "Container", "max": {"cpu": "2"}},
    ),
]


@pytest.mark.parametrize(("kind", "path", "value", "written"), STRIP)
def test_strip_defaults_keeps_what_the_person_wrote(kind: str, path: str, value: Any, written: Any) -> None:
    stripped = strip_defaults(kind=kind, path=parse_path(path), value=value)
    assert stripped.value == (ABSENT if written is None else written)
    assert bool(stripped.removed) is (written != value)


def test_defaults_within_names_each_field_and_how_it_was_filled() -> None:
    port = {"port": 80, "targetPort": 80, "protocol": "TCP", "nodePort": 31234}
    found = defaults_within(kind="Service", path=parse_path("spec.ports[port=80,protocol=TCP]"), value=port)
    assert {(format_path(f.path), f.value, f.how) for f in found} == {
        ("spec.ports[port=80,protocol=TCP].targetPort", 80, Filled.DEFAULT),
        ("spec.ports[port=80,protocol=TCP].protocol", "TCP", Filled.DEFAULT),
        ("spec.ports[port=80,protocol=TCP].nodePort", 31234, Filled.ALLOCATED),
    }
    rules = {format_path(f.path).rsplit(".", 1)[-1]: f.rule for f in found}
    assert rules == {
        "targetPort": "a Service port's targetPort is its port",
        "protocol": 'default "TCP"',
        "nodePort": "allocated by the API server",
    }


def test_a_value_that_is_a_default_as_a_whole() -> None:
    (found,) = defaults_within(kind="Namespace", path=parse_path("spec.finalizers"), value=["kubernetes"])
    assert found.value == ["kubernetes"] and found.how is Filled.DEFAULT
    assert strip_defaults(kind="Namespace", path=parse_path("spec.finalizers"), value=["kubernetes"]).value is ABSENT
