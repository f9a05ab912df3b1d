"""The registry of GitOps controller kinds: ONE tuple, in order. Adding a controller is one module plus one line here.

Order matters where two kinds could both claim an object: an Argo CD ApplicationSet comes before the Application
(an Application it generates also carries tracking metadata), Argo CD before Flux.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from writeback.errors import InputError
from writeback.gitops import argocd, flux
from writeback.gitops.base import GitOpsController
from writeback.kube.refs import ObjectRef, group_of

CONTROLLERS: tuple[GitOpsController, ...] = (
    *argocd.KINDS,
    *flux.KINDS,
)

# the kinds a person can break-glass, and name with a flag or a config key
SUSPENDABLE: tuple[GitOpsController, ...] = tuple(c for c in CONTROLLERS if c.suspendable)
# the kinds that may hold a break-glass record: the above, and the parents --include-parents suspends
RECORDED: tuple[GitOpsController, ...] = tuple(c for c in CONTROLLERS if c.suspendable or c.parent_suspendable)


def by_name(name: str) -> GitOpsController:
    for c in CONTROLLERS:
        if c.name == name:
            return c
    raise InputError(f"unknown GitOps controller kind {name!r} (known: {', '.join(c.name for c in CONTROLLERS)})")


def find(ref: ObjectRef) -> GitOpsController | None:
    """The kind of a controller object, or None for any other object."""
    return next((c for c in CONTROLLERS if (group_of(c.api_version), c.kind) == (ref.group, ref.kind)), None)


def kind_of(ref: ObjectRef) -> GitOpsController:
    """The kind of an object that may hold a break-glass record; an InputError naming what does otherwise."""
    found = find(ref)
    if found is None or found not in RECORDED:
        titles = ", ".join(c.title for c in SUSPENDABLE)
        raise InputError(f"{ref}: break-glass works on {titles}")
    return found


def title_of(ref: ObjectRef) -> str:
    """``Argo CD Application``, ``Flux GitRepository``; the bare kind for any other object."""
    found = find(ref)
    return found.title if found is not None else ref.kind


def describe(ref: ObjectRef) -> str:
    """``Argo CD Application argocd/web``: how messages name a controller object."""
    return ref.named(title_of(ref))


def parent_of(body: Mapping[str, Any], *, namespace: str) -> ObjectRef | None:
    """The GitOps parent that applies this object (``namespace``: the object's own), if any."""
    return next((p for c in CONTROLLERS if (p := c.applied_by(body, namespace=namespace)) is not None), None)


def app_of(body: Mapping[str, Any]) -> str | None:
    """The application (Argo CD Application, Flux Kustomization/HelmRelease) that deploys a live object, if recorded."""
    return next((a for c in CONTROLLERS if (a := c.app_name(body)) is not None), None)


def gitops_managers() -> tuple[str, ...]:
    """Every registered controller's field managers."""
    return tuple(m for c in CONTROLLERS for m in c.field_managers)


def not_found(controller: GitOpsController, ref: ObjectRef, *, offline: bool) -> InputError:
    what = ref.named(controller.title)
    if offline:
        plural = f"{controller.kind.lower()}s.{group_of(controller.api_version)}"
        return InputError(
            f"{what}: not found in the --live dump (offline, writeback looks for it there: add it with "
            f"`kubectl get {plural} -n {ref.namespace} {ref.name} -o yaml`)"
        )
    return InputError(f"{what}: not found in the cluster")
