"""GitOps controller objects (Argo CD Applications, Flux Kustomizations/HelmReleases) for break-glass.

Reads go through ``KubeCluster``; the one write is a JSON patch of the controller object itself (field manager
``writeback-break-glass``), which the ClusterRole allows on these kinds for break-glass only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from writeback.adapters.cluster import KubeCluster
from writeback.adapters.kubeconfigs import ClusterAccess, resolve_kubeconfig
from writeback.config import Selector
from writeback.errors import ClusterError, InputError
from writeback.model import ObjectRef

log = logging.getLogger(__name__)

_SA_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


class ControllerObjects:
    """Get, list and JSON-patch controller objects on a real cluster."""

    def __init__(self, *, cluster: KubeCluster) -> None:
        self.cluster = cluster
        self.patch_calls = 0

    def get(self, *, ref: ObjectRef) -> dict[str, Any] | None:
        return self.cluster.get_object(ref=ref)

    def list_kind(
        self, *, api_version: str, kind: str, namespace: str | None
    ) -> list[tuple[ObjectRef, dict[str, Any]]]:
        """Every object of a kind (in ``namespace``, or all); an empty list when the CRD is not installed."""
        try:
            self.cluster.resource_for(api_version=api_version, kind=kind)
        except ClusterError as e:
            log.debug("%s (%s) not served, skipped: %s", kind, api_version, e)
            return []
        selector = Selector.model_validate(
            {"apiVersion": api_version, "kind": kind, "namespaces": [namespace] if namespace else []}
        )
        return [(o.ref, dict(o.body)) for o in self.cluster.list_objects(selector=selector)]

    def json_patch(self, *, ref: ObjectRef, ops: Sequence[Mapping[str, Any]], field_manager: str) -> dict[str, Any]:
        """Apply a JSON patch (its ``test`` ops make it conditional). A failed test or a conflict: ClusterError."""
        res = self.cluster.resource_for(api_version=ref.api_version, kind=ref.kind)
        path = res.object_path(namespace=ref.namespace, name=ref.name)
        self.patch_calls += 1
        # real write: break-glass suspends/resumes auto-sync on the GitOps controller object itself
        doc = self.cluster._request(
            method="PATCH", path=path, what=f"break-glass patch of {ref}", query=[("fieldManager", field_manager)],
            body=[dict(op) for op in ops], content_type="application/json-patch+json",
        )  # fmt: skip
        assert doc is not None
        return doc


def _context(access: ClusterAccess) -> Mapping[str, Any] | None:
    entry = _context_entry(access)
    return None if entry is None else (entry.get("context") or {})


def context_name(access: ClusterAccess) -> str | None:
    """The kubeconfig context in use (a readable cluster name for PR bodies); None in-cluster."""
    entry = _context_entry(access)
    return str(entry["name"]) if entry and entry.get("name") else None


def _context_entry(access: ClusterAccess) -> Mapping[str, Any] | None:
    from kubernetes import config

    try:
        path = resolve_kubeconfig(access=access)
        if path is None:
            return None
        contexts, active = config.list_kube_config_contexts(config_file=path)  # type: ignore[no-untyped-call]
    except (InputError, OSError):
        return None
    except Exception as e:  # the loader raises assorted errors for malformed files
        log.debug("kubeconfig context not read: %s", e)
        return None
    if access.context:
        active = next((c for c in contexts or () if c.get("name") == access.context), None)
    return dict(active or {})


def kubeconfig_user(access: ClusterAccess) -> str | None:
    """The user name of the kubeconfig context in use (None in-cluster or when it cannot be read)."""
    ctx = _context(access)
    user = (ctx or {}).get("user")
    return str(user) if user else None


def default_namespace(access: ClusterAccess) -> str:
    """The namespace kubectl would use: the context's, the service account's in-cluster, else ``default``."""
    ctx = _context(access)
    if ctx and ctx.get("namespace"):
        return str(ctx["namespace"])
    if ctx is None and os.path.isfile(_SA_NAMESPACE):
        with open(_SA_NAMESPACE, encoding="utf-8") as f:
            return f.read().strip() or "default"
    return "default"
