"""Hotfix capture, the pure half: whose write is a person's, what it changed, what may be stored. Pure.

The watch (``writeback.service.hotfixing``) asks :func:`person_wrote` of every change it sees (the object and the
version just before it) and stores :func:`redacted_capture` of it with :func:`own_change`, the fields that write
changed; during a cycle ``writeback.capture.composing`` puts back what the GitOps controller took of each, from
:func:`backport_body`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from writeback.capture.redaction import LAST_APPLIED, restore, scrub
from writeback.drift.deciding import Role, manager_role
from writeback.drift.diffing import diff
from writeback.drift.listkeys import resolver
from writeback.drift.ownership import parse_managed_fields
from writeback.kube.paths import format_path, parse_path, parse_pattern
from writeback.kube.pathtypes import FieldPath
from writeback.model import Capture, FieldOwner, ManagerOperation
from writeback.settings import Policy

__all__ = [
    "backport_body",
    "essence",
    "newest_writer",
    "own_change",
    "owned_change",
    "person_write",
    "person_wrote",
    "redacted_capture",
]

_SERVER_META = ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink")


def _entries(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    fields = (body.get("metadata") or {}).get("managedFields") or []
    return [e for e in fields if isinstance(e, Mapping) and e.get("subresource", "") != "status"]


def newest_writer(body: Mapping[str, Any], *, policy: Policy) -> FieldOwner | None:
    """The manager of the newest managedFields entry (a person wins a tie within the same second)."""
    entries = _entries(body)
    if not entries:
        return None
    latest = max(str(e.get("time") or "") for e in entries)
    tied = [e for e in entries if str(e.get("time") or "") == latest]
    tied.sort(key=lambda e: manager_role(policy, str(e.get("manager", ""))) is not Role.PERSON)
    e = tied[0]
    return FieldOwner(
        manager=str(e.get("manager", "")),
        operation=ManagerOperation.of(e.get("operation")),
        subresource=str(e.get("subresource", "")),
        time=str(e.get("time")) if e.get("time") else None,
    )


def person_write(body: Mapping[str, Any], *, policy: Policy) -> FieldOwner | None:
    """The person's write, when the newest write to ``body`` was made by one; else None."""
    owner = newest_writer(body, policy=policy)
    if owner is None or manager_role(policy, owner.manager) is not Role.PERSON:
        return None
    return owner


def _entry(body: Mapping[str, Any], manager: str, operation: str) -> Mapping[str, Any] | None:
    return next((e for e in _entries(body) if e.get("manager") == manager and e.get("operation") == operation), None)


def _subset(a: Any, b: Any) -> bool:
    """Whether the FieldsV1 tree ``a`` owns nothing that ``b`` does not."""
    if not isinstance(a, Mapping) or not a:
        return isinstance(b, Mapping)
    if not isinstance(b, Mapping):
        return False
    return all(k in b and _subset(v, b[k]) for k, v in a.items())


def _moved_on(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> bool:
    """A managedFields entry that this write made or refreshed: new, a later time, or owning a field more."""
    if before is None:
        return True
    if str(after.get("time") or "") > str(before.get("time") or ""):
        return True
    return not _subset(after.get("fieldsV1"), before.get("fieldsV1"))


def person_wrote(
    previous: Mapping[str, Any] | None, current: Mapping[str, Any], *, policy: Policy
) -> FieldOwner | None:
    """The person whose write made ``current`` out of ``previous`` (the version just before it, as the watch saw
    it), or None when the write was not a person's.

    The newest managedFields entry names the writer, but times have one-second steps: a GitOps revert in the same
    second as the person's write leaves the person's entry the newest. So the writer is whoever's entry this write
    made or refreshed (new, later, or owning more); the person's entry only when nobody else's moved on. When
    nothing moved on at all, the same person wrote again within the same second (``resourceVersion`` tells the
    two writes apart), or a person removed the last fields they owned, which takes their entry away: then the
    write's time is not recorded (the capturer's clock stands in)."""
    owner = person_write(current, policy=policy)
    if previous is None:
        return owner
    moved = [e for e in _entries(current)
             if _moved_on(_entry(previous, str(e.get("manager", "")), str(e.get("operation", ""))), e)]  # fmt: skip
    if owner is not None:
        mine = _entry(current, owner.manager, owner.operation)
        if any(e is mine for e in moved):
            return owner
        return None if moved else owner  # another manager wrote (the person's entry may even have lost fields)
    if moved:
        return None
    gone = [e for e in _entries(previous)
            if manager_role(policy, str(e.get("manager", ""))) is Role.PERSON
            and _entry(current, str(e.get("manager", "")), str(e.get("operation", ""))) is None]  # fmt: skip
    if not gone:
        return None
    e = max(gone, key=lambda e: str(e.get("time") or ""))
    return FieldOwner(manager=str(e.get("manager", "")), operation=ManagerOperation.of(e.get("operation")),
                      subresource=str(e.get("subresource", "")), time=None)  # fmt: skip


def own_change(previous: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[FieldPath, ...]:
    """The fields one write changed: where ``current`` differs from the version just before it (status and
    server-set metadata aside), keyed lists matched by their keys."""
    keys = resolver(kind=str(current.get("kind", "")), learned=parse_managed_fields(current).list_keys)
    return tuple(leaf.path for leaf in diff(live=essence(current), git=essence(previous), keys=keys))


def owned_change(capture_body: Mapping[str, Any], live: Mapping[str, Any], *, manager: str) -> tuple[FieldPath, ...]:
    """Without the version before a write: the fields where the captured object differs from ``live`` and that the
    person's managedFields entry owned (a capture stored before the watch kept that version, or a creation)."""
    owners = parse_managed_fields(capture_body)
    keys = resolver(kind=str(capture_body.get("kind", "")), learned=owners.list_keys)
    leaves = diff(live=essence(capture_body), git=essence(live), keys=keys)
    out = []
    for leaf in leaves:
        owner = owners.owner_of(leaf.path, subtree=leaf.item)
        if owner is not None and owner.manager == manager:
            out.append(leaf.path)
    return tuple(out)


def essence(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a person can change: the object without status, server-set metadata and client-side apply's
    bookkeeping (Argo CD's default sync rewrites the last-applied annotation on every apply)."""
    out = {k: v for k, v in body.items() if k != "status"}
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in _SERVER_META}
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping) and LAST_APPLIED in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED} or None
        if meta["annotations"] is None:
            del meta["annotations"]
    out["metadata"] = meta
    return out


def _patterns(policy: Policy) -> tuple[tuple[Any, ...], ...]:
    return tuple(parse_pattern(p) for p in policy.sensitive_paths)


def redacted_capture(capture: Capture, *, policy: Policy) -> Capture:
    """``capture`` without the values at ``policy.sensitive_paths`` (the removed paths are added to it)."""
    done = scrub(capture.body, patterns=_patterns(policy), kind=capture.ref.kind)
    if not done.removed and not done.removed_last_applied:
        return capture
    return replace(
        capture,
        body=done.body,
        redacted=(*capture.redacted, *(format_path(p) for p in done.removed)),
        redacted_last_applied=(*capture.redacted_last_applied, *(format_path(p) for p in done.removed_last_applied)),
    )


def backport_body(capture: Capture, *, live: Mapping[str, Any]) -> dict[str, Any]:
    """The captured object with its removed sensitive fields taken from ``live`` (never false drift)."""
    return restore(
        capture.body,
        live=live,
        removed=[parse_path(p) for p in capture.redacted],
        removed_last_applied=[parse_path(p) for p in capture.redacted_last_applied],
    )
