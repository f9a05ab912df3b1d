"""The twin of a Git manifest: what a dry-run create takes to show what the server makes of Git alone. Pure.

A server-side-apply dry-run onto the live object keeps every field another manager owns there, so it cannot tell a
default from a field a person added. A dry-run create of the same manifest under a generated name runs defaulting
and admission with no live object at all: a field it holds was filled in by the server for Git's manifest.

The twin keeps the manifest as Git has it, except what a second object of the same content could not be created
with: its name (``generateName`` instead), and values the server allows only once (a Service's cluster IP and
node ports, a PriorityClass's ``globalDefault``). Kinds whose name is fixed by their content (a CRD's
``<plural>.<group>``, an APIService's ``<version>.<group>``) have no twin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from writeback.drift.normalizing import plain
from writeback.kube.refs import ObjectRef

__all__ = ["has_twin", "twin_manifest"]

# Kinds whose name is derived from their content: a twin under another name is invalid.
_NAME_FIXED_BY_CONTENT = frozenset(
    {
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
    }
)
_SERVER_METADATA = ("name", "generateName", "uid", "resourceVersion", "creationTimestamp", "managedFields",
                    "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences")  # fmt: skip
# generateName bases longer than this are cut by the server (63 minus its 5 random characters).
_BASE = 57


def has_twin(ref: ObjectRef) -> bool:
    """Can a twin of this kind be created under another name?"""
    return (ref.group, ref.kind) not in _NAME_FIXED_BY_CONTENT


def twin_manifest(body: Mapping[str, Any], ref: ObjectRef) -> dict[str, Any]:
    """A copy of ``body`` that a dry-run create accepts next to the live object: a generated name, the namespace of
    ``ref``, and no value that only one object may hold."""
    out: dict[str, Any] = plain(body)
    out["apiVersion"], out["kind"] = ref.api_version, ref.kind
    out.pop("status", None)
    meta = out.get("metadata")
    meta = dict(meta) if isinstance(meta, Mapping) else {}
    for k in _SERVER_METADATA:
        meta.pop(k, None)
    meta["generateName"] = f"{ref.name[:_BASE].rstrip('-.')}-"
    if ref.namespace:
        meta["namespace"] = ref.namespace
    else:
        meta.pop("namespace", None)
    out["metadata"] = meta
    spec = out.get("spec")
    if ref.group == "" and ref.kind == "Service" and isinstance(spec, dict):
        _service(spec)
    if ref.group == "scheduling.k8s.io" and ref.kind == "PriorityClass":
        out.pop("globalDefault", None)  # only one PriorityClass may be the global default
    return out


def _service(spec: dict[str, Any]) -> None:
    """A Service's allocated values: a cluster IP or node port Git pins is taken by the live object already."""
    if spec.get("clusterIP") not in (None, "None"):
        spec.pop("clusterIP", None)
    ips = spec.get("clusterIPs")
    if isinstance(ips, list) and ips != ["None"]:
        spec.pop("clusterIPs", None)
    spec.pop("healthCheckNodePort", None)
    ports = spec.get("ports")
    if isinstance(ports, list):
        for port in ports:
            if isinstance(port, dict):
                port.pop("nodePort", None)
