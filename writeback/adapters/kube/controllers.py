"""GitOps controller objects (Argo CD Applications, Flux Kustomizations/HelmReleases) for break-glass.

Reads go through ``KubeCluster``; the one write is a JSON patch of the controller object itself (field manager
``writeback-break-glass``), which the ClusterRole allows on these kinds for break-glass only. Before it,
break-glass asks the authorizer (SelfSubjectAccessReview) and the authenticator (SelfSubjectReview: who we
are); after it, an Event on the object says what happened.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from writeback.adapters.kube.cluster import KubeCluster
from writeback.adapters.kube.kubeconfigs import ClusterAccess, resolve_kubeconfig
from writeback.errors import ClusterConflict, InputError, KindNotServed
from writeback.kube.refs import ObjectRef
from writeback.settings import Selector

log = logging.getLogger(__name__)

_SA_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessReview:
    """What the API server's authorizer said about one request of ours (a SelfSubjectAccessReview)."""

    allowed: bool
    verb: str
    resource: str  # ``applications.argoproj.io``
    namespace: str | None
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EventSpec:
    """A Kubernetes Event about a controller object (``kubectl describe`` shows it)."""

    ref: ObjectRef
    uid: str | None
    name: str  # deterministic: emitting the same event twice creates it once
    reason: str
    message: str
    warning: bool = False


class ControllerObjects:
    """Get, list and JSON-patch controller objects on a real cluster; review access, tell who we are, emit Events."""

    def __init__(self, *, cluster: KubeCluster) -> None:
        self.cluster = cluster
        self.patch_calls = 0

    def get(self, *, ref: ObjectRef) -> dict[str, Any] | None:
        return self.cluster.get_object(ref=ref)

    def list_kind(
        self, *, api_version: str, kind: str, namespace: str | None
    ) -> list[tuple[ObjectRef, dict[str, Any]]]:
        """Every object of a kind (in ``namespace``, or all); an empty list only when the kind is not served.
        Any other error (unreachable, denied) is raised: a failure is never "none found"."""
        try:
            self.cluster.resource_for(api_version=api_version, kind=kind)
        except KindNotServed as e:
            log.debug("%s (%s) not served, skipped: %s", kind, api_version, e)
            return []
        selector = Selector.model_validate(
            {"apiVersion": api_version, "kind": kind, "namespaces": [namespace] if namespace else []}
        )
        return [(o.ref, dict(o.body)) for o in self.cluster.list_objects(selector=selector)]

    def json_patch(self, *, ref: ObjectRef, ops: Sequence[Mapping[str, Any]], field_manager: str) -> dict[str, Any]:
        """Apply a JSON patch (its ``test`` ops make it conditional). A failed test or a conflict: ClusterConflict."""
        res = self.cluster.resource_for(api_version=ref.api_version, kind=ref.kind)
        path = res.object_path(namespace=ref.namespace, name=ref.name)
        self.patch_calls += 1
        # real write: break-glass suspends/resumes auto-sync on the GitOps controller object itself
        doc = self.cluster.request(
            method="PATCH", path=path, what=f"break-glass patch of {ref}", query=[("fieldManager", field_manager)],
            body=[dict(op) for op in ops], content_type="application/json-patch+json",
        )  # fmt: skip
        assert doc is not None
        return doc

    def review(self, *, verb: str, ref: ObjectRef) -> AccessReview:
        """A SelfSubjectAccessReview: may we ``verb`` this object? (Nothing is stored; the authorizer answers.)"""
        res = self.cluster.resource_for(api_version=ref.api_version, kind=ref.kind)
        attributes = {"verb": verb, "group": ref.group, "resource": res.plural, "name": ref.name}
        if res.namespaced and ref.namespace:
            attributes["namespace"] = ref.namespace
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes}}  # fmt: skip
        # real write: none stored; a SelfSubjectAccessReview is only evaluated
        doc = self.cluster.request(
            method="POST", path="/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            what=f"access review ({verb} {ref})", body=body, content_type="application/json",
        )  # fmt: skip
        status = (doc or {}).get("status") or {}
        resource = f"{res.plural}.{ref.group}" if ref.group else res.plural
        return AccessReview(
            allowed=bool(status.get("allowed")) and not status.get("denied"), verb=verb, resource=resource,
            namespace=ref.namespace if res.namespaced else None,
            reason=str(status.get("reason") or status.get("evaluationError") or ""),
        )  # fmt: skip

    def whoami(self) -> str | None:
        """The user the API server authenticated us as (a SelfSubjectReview); None when the API is not served."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        # real write: none stored; a SelfSubjectReview only echoes who we are
        doc = self.cluster.request(
            method="POST", path="/apis/authentication.k8s.io/v1/selfsubjectreviews",
            what="who am I (SelfSubjectReview)", body=body, content_type="application/json", allow_404=True,
        )  # fmt: skip
        user = ((doc or {}).get("status") or {}).get("userInfo") or {}
        return str(user["username"]) if user.get("username") else None

    def emit_event(self, event: EventSpec, *, component: str, now: datetime) -> bool:
        """Create the Event (core v1) in the object's namespace. False when one of that name exists already."""
        ref = event.ref
        involved = {"apiVersion": ref.api_version, "kind": ref.kind, "namespace": ref.namespace, "name": ref.name}
        if event.uid:
            involved["uid"] = event.uid
        stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": event.name, "namespace": ref.namespace},
            "involvedObject": involved, "reason": event.reason, "message": event.message,
            "type": "Warning" if event.warning else "Normal", "source": {"component": component},
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }  # fmt: skip
        path = f"/api/v1/namespaces/{quote(ref.namespace or 'default', safe='')}/events"
        try:
            # real write: an Event about break-glass on the controller object (create only)
            self.cluster.request(method="POST", path=path, what=f"event {event.reason} on {ref}", body=body,
                                 content_type="application/json")  # fmt: skip
        except ClusterConflict:
            return False  # 409 AlreadyExists: this very event was emitted before
        return True


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
