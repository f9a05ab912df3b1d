"""Scopes of kinds offline: built-in ones from the generated data, custom ones from their CRDs."""

from __future__ import annotations

import pytest

from writeback.kube.kinds import builtin_namespaced, crd_scopes, with_crds


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("apps/v1", "Deployment", True),
        ("v1", "ConfigMap", True),
        ("v1", "Namespace", False),
        ("v1", "PersistentVolume", False),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", False),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", True),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", False),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", False),
        ("networking.k8s.io/v1", "IngressClass", False),
        ("resource.k8s.io/v1", "DeviceClass", False),  # no hand list had it
        ("autoscaling/v1", "HorizontalPodAutoscaler", True),  # any version of the group
        ("example.com/v1", "Widget", None),
        ("apps/v1", "Widget", None),
    ],
)
def test_builtin_scopes(api_version: str, kind: str, expected: bool | None) -> None:
    assert builtin_namespaced(api_version, kind) is expected


def _crd(kind: str, scope: str, api_version: str = "apiextensions.k8s.io/v1") -> dict[str, object]:
    return {
        "apiVersion": api_version,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.lower()}s.example.com"},
        "spec": {"group": "example.com", "scope": scope, "names": {"kind": kind, "plural": f"{kind.lower()}s"}},
    }


def test_crd_scopes_and_their_use() -> None:
    bodies = [
        _crd("Widget", "Namespaced"),
        _crd("Gadget", "Cluster"),
        _crd("Broken", "Sometimes"),  # not a scope: no answer
        _crd("Other", "Cluster", api_version="example.com/v1"),  # not a CRD
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        "not a mapping",
    ]
    scopes = crd_scopes(bodies)
    assert scopes == {("example.com", "Widget"): True, ("example.com", "Gadget"): False}
    ask = with_crds(builtin_namespaced, scopes)
    assert ask("example.com/v1", "Gadget") is False
    assert ask("example.com/v1alpha1", "Widget") is True
    assert ask("other.com/v1", "Gadget") is None
    assert ask("v1", "Namespace") is False
