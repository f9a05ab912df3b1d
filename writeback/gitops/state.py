"""What the GitOps controller says: the revision it last applied, its destination namespace, its ignore rules.

Pure: the controller object comes from a ``Getter`` (the cluster adapter, or a live dump offline).

Argo CD: ``Application.status.sync.revision`` (``revisions[0]`` for multi-source apps),
``spec.destination.namespace``, ``spec.ignoreDifferences``.
Flux: ``Kustomization.status.lastAppliedRevision`` (``main@sha1:<sha>``), ``spec.targetNamespace``.
The object is read from the cluster, or offline from the live dump when it is in there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.errors import InputError
from writeback.gitops.kinds import ARGOCD, FLUX_KUSTOMIZATION
from writeback.kube.refs import ObjectRef
from writeback.model import LiveObject

Getter = Callable[[ObjectRef], Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerState:
    """What the controller object told us (all optional)."""

    source: str = ""  # e.g. "Argo CD Application argocd/web"
    revision: str | None = None  # as written in the status (the caller resolves it to a commit)
    namespace: str | None = None  # destination / target namespace
    ignore_differences: tuple[Mapping[str, Any], ...] = ()


def live_getter(objects: Sequence[LiveObject]) -> Getter:
    """Look a controller object up in a live dump (offline mode): same group, kind, namespace, name."""
    by_id = {o.ref.identity: o.body for o in objects}
    return lambda ref: by_id.get(ref.identity)


def _not_found(what: str, ref: ObjectRef, *, offline: bool, resource: str) -> InputError:
    if offline:
        return InputError(
            f"{what} {ref.namespace}/{ref.name}: not found in the --live dump (offline, writeback looks for it "
            f"there: add it with `kubectl get {resource} -n {ref.namespace} {ref.name} -o yaml`)"
        )
    return InputError(f"{what} {ref.namespace}/{ref.name}: not found in the cluster")


def read_argocd(*, application: str, get: Getter, offline: bool = False) -> ControllerState:
    """``offline``: ``get`` looks in the live dump (errors say so)."""
    ref = ARGOCD.ref(application)
    body = get(ref)
    if body is None:
        raise _not_found("Argo CD Application", ref, offline=offline, resource="applications.argoproj.io")
    spec, status = body.get("spec") or {}, body.get("status") or {}
    sync = status.get("sync") or {}
    revision = sync.get("revision") or next(iter(sync.get("revisions") or []), None)
    dest = (spec.get("destination") or {}).get("namespace")
    ignores = tuple(i for i in spec.get("ignoreDifferences") or [] if isinstance(i, Mapping))
    return ControllerState(
        source=f"Argo CD Application {ref.namespace}/{ref.name} status.sync.revision",
        revision=str(revision) if revision else None,
        namespace=str(dest) if dest else None,
        ignore_differences=ignores,
    )


def read_flux(*, kustomization: str, get: Getter, offline: bool = False) -> ControllerState:
    ref = FLUX_KUSTOMIZATION.ref(kustomization)
    body = get(ref)
    if body is None:
        raise _not_found(
            "Flux Kustomization", ref, offline=offline, resource="kustomizations.kustomize.toolkit.fluxcd.io"
        )
    spec, status = body.get("spec") or {}, body.get("status") or {}
    revision = status.get("lastAppliedRevision")
    target = spec.get("targetNamespace")
    return ControllerState(
        source=f"Flux Kustomization {ref.namespace}/{ref.name} status.lastAppliedRevision",
        revision=str(revision) if revision else None,
        namespace=str(target) if target else None,
    )
