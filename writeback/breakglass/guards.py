"""Break-glass guards: ask before patching, know who acts, say what happened, and find the parents that undo it.

- ``require(objects, refs)``: a SelfSubjectAccessReview per object; a "no" is ``AccessDenied`` (exit 2).
- ``actor(objects, given)``: (by, kube_user): ``--actor``, else who the API server says we are.
- ``emit(objects, ...)``: a Kubernetes Event on the object (best effort, once per fact).
- ``chain(objects, ref, body)``: the GitOps parents up to the root, and which of them would undo it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from writeback.adapters.kube.controllers import AccessReview, EventSpec
from writeback.breakglass import record as bg
from writeback.breakglass.patches import auto_sync_on
from writeback.errors import AccessDenied, ClusterError, InputError, KindNotServed
from writeback.gitops.base import GitOpsController
from writeback.gitops.registry import describe, kind_of, parent_of
from writeback.kube.refs import ObjectRef
from writeback.kube.wellknown import BREAK_GLASS_EVENT_COMPONENT

log = logging.getLogger(__name__)

DEPTH = 8  # app of apps of apps ...: deeper than this is a loop or a mistake


class Objects(Protocol):
    """What break-glass needs from the cluster (``writeback.adapters.kube.controllers.ControllerObjects``)."""

    def get(self, *, ref: ObjectRef) -> dict[str, Any] | None: ...

    def list_kind(
        self, *, api_version: str, kind: str, namespace: str | None
    ) -> list[tuple[ObjectRef, dict[str, Any]]]: ...

    def json_patch(self, *, ref: ObjectRef, ops: Sequence[Mapping[str, Any]], field_manager: str) -> dict[str, Any]: ...

    def review(self, *, verb: str, ref: ObjectRef) -> AccessReview: ...

    def whoami(self) -> str | None: ...

    def emit_event(self, event: EventSpec, *, component: str, now: datetime) -> bool: ...


def require(objects: Objects, refs: Sequence[ObjectRef], *, verb: str = "patch") -> None:
    """Ask the authorizer before writing; a denial names the verb, the resource and the namespace (exit 2)."""
    for ref in refs:
        review = objects.review(verb=verb, ref=ref)
        if review.allowed:
            continue
        where = f" in namespace {review.namespace}" if review.namespace else ""
        why = f": {review.reason}" if review.reason else ""
        raise AccessDenied(
            f"not allowed to {review.verb} {review.resource} {ref.name!r}{where} (SelfSubjectAccessReview{why}); "
            "nothing was changed"
        )


def actor(objects: Objects, given: str | None) -> tuple[str, str | None]:
    """(who acts, who the API server says we are). The kubeconfig's user name is only a local alias, so ``by``
    is ``--actor`` or the authenticated user name (SelfSubjectReview)."""
    user = objects.whoami()
    by = (given or "").strip() or user
    if not by:
        raise InputError("cannot tell who you are: the API server does not serve SelfSubjectReview; give --actor NAME")
    return by, user


def emit(
    objects: Objects, *, ref: ObjectRef, body: Mapping[str, Any] | None, record: bg.Record, reason: bg.EventReason,
    now: datetime, detail: str = "", key: str = "",
) -> None:  # fmt: skip
    """One Event on the object for this fact (the same fact twice: one Event). A failure is logged, never raised:
    the record on the object is the source of truth, the Event only tells people."""
    uid = ((body or {}).get("metadata") or {}).get("uid")
    event = EventSpec(
        ref=ref, uid=str(uid) if uid else None, name=bg.event_name(ref, record, reason, key=key), reason=str(reason),
        message=bg.event_message(record, reason, now=now, detail=detail),
        warning=reason is bg.EventReason.EXPIRED_WAITING,
    )  # fmt: skip
    try:
        objects.emit_event(event, component=BREAK_GLASS_EVENT_COMPONENT, now=now)
    except ClusterError as e:
        log.warning("break-glass: no %s Event on %s: %s", reason, describe(ref), e)


# ---------------------------------------------------------------- parents


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """One GitOps parent up the chain of a controller object."""

    ref: ObjectRef
    kind: GitOpsController
    body: dict[str, Any]
    child: ObjectRef  # the object this parent applies
    undoes: bool  # its next sync would put the child's auto-sync back (it syncs by itself)

    @property
    def name(self) -> str:
        return describe(self.ref)


def chain(objects: Objects, *, ref: ObjectRef, body: Mapping[str, Any]) -> tuple[Link, ...]:
    """The parents of ``ref``, nearest first, up to the root. A parent that does not exist (or whose kind is not
    served) ends the chain: nothing above it applies anything. A parent we may not read is an error."""
    links: list[Link] = []
    seen = {ref.identity}
    child, child_body = ref, body
    while len(links) < DEPTH:
        parent = parent_of(child_body, namespace=child.namespace or "default")
        if parent is None or parent.identity in seen:
            break
        try:
            parent_body = objects.get(ref=parent)
        except KindNotServed:
            parent_body = None
        if parent_body is None:
            log.info("break-glass: %s names the parent %s, which is not there", describe(child), describe(parent))
            break
        kind = kind_of(parent)
        undoes = auto_sync_on(kind=kind, body=parent_body, application=child.name)
        links.append(Link(ref=parent, kind=kind, body=parent_body, child=child, undoes=undoes))
        seen.add(parent.identity)
        child, child_body = parent, parent_body
    return tuple(links)


def refusal(ref: ObjectRef, undoing: Sequence[Link]) -> InputError:
    """``start`` without --include-parents or --ignore-parent while a parent would undo the suspension."""
    first = undoing[0]
    more = f" (and {len(undoing) - 1} more up the chain: {', '.join(link.name for link in undoing[1:])})"
    return InputError(
        f"{describe(ref)} is applied by {first.name}, whose next sync would put auto-sync back"
        f"{more if len(undoing) > 1 else ''}: nothing was changed. Use --include-parents to suspend "
        f"{'them' if len(undoing) > 1 else 'it'} too (end restores them), or --ignore-parent to go ahead anyway"
    )
