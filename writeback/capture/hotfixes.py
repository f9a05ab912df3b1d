"""Hotfix capture, the pure half: whose write is a person's, whether GitOps reverted it, what may be stored. Pure.

The watch (``writeback.service.hotfixing``) asks :func:`person_write` of every object it sees change and stores
:func:`redacted_capture` of it; during a cycle it compares the live object with the capture (:func:`essence`,
:func:`reverting_writer`) and serves :func:`backport_body` when the GitOps controller has reverted it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from writeback.capture.redaction import LAST_APPLIED, restore, scrub
from writeback.drift.deciding import Role, manager_role
from writeback.kube.paths import format_path, parse_path, parse_pattern
from writeback.model import Capture, FieldOwner, ManagerOperation
from writeback.settings import Policy

__all__ = [
    "backport_body",
    "essence",
    "newest_writer",
    "person_write",
    "redacted_capture",
    "reverting_writer",
    "synced_since",
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


def _person_fields(body: Mapping[str, Any], capture: Capture) -> Any:
    for e in _entries(body):
        if e.get("manager") == capture.manager and e.get("operation") == capture.operation:
            return e.get("fieldsV1")
    return None


def reverting_writer(*, live: Mapping[str, Any], capture: Capture, policy: Policy) -> FieldOwner | None:
    """The GitOps write that took the person's fields back since the capture, or None if they are still theirs.

    Server-side apply moves a field's ownership to whoever overwrites it (a forced apply, or an update), so
    the person's managedFields entry losing fields is the revert; the GitOps manager that wrote at or after
    the capture is who did it.
    """
    kept = _person_fields(live, capture)
    if kept is not None and kept == _person_fields(capture.body, capture):
        return None
    after = [
        e
        for e in _entries(live)
        if manager_role(policy, str(e.get("manager", ""))) is Role.GITOPS
        and str(e.get("time") or "") >= (capture.time or "")
    ]
    if not after:
        return None
    e = max(after, key=lambda e: str(e.get("time") or ""))
    return FieldOwner(
        manager=str(e.get("manager", "")),
        operation=ManagerOperation.of(e.get("operation")),
        time=str(e.get("time")) if e.get("time") else None,
    )


def synced_since(*, live: Mapping[str, Any], capture: Capture, policy: Policy) -> bool:
    """Whether a GitOps manager wrote ``live`` after the person's captured write (a later second).

    A live object that looks as the person left it is done with only then: the controller applied a Git that
    carries the change (the PR merged and synced). Before that, the controller's next reconcile may still revert
    it (Flux does so on its next interval), and the capture is the only copy of the change.
    """
    return any(
        manager_role(policy, str(e.get("manager", ""))) is Role.GITOPS
        and str(e.get("time") or "") > (capture.time or "")
        for e in _entries(live)
    )


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
