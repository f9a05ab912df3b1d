"""Drifts of whole objects: a Git resource missing live (``deleted``) and a live object Git does not declare
(``new`` when a person created it), each pending when the head of Git is ahead of the applied revision."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from writeback.drift.deciding import Role, manager_role
from writeback.drift.normalizing import normalize
from writeback.drift.ownership import parse_managed_fields
from writeback.drift.report import REDACTED
from writeback.drift.subtree_matching import matches_within
from writeback.model import Decision, DesiredObject, Drift, LiveObject, Op, Rule, Side
from writeback.settings import Policy

__all__ = ["created_live", "missing"]


def missing(d: DesiredObject, *, gone_at_head: bool, revision: str | None) -> Drift:
    """A Git resource with no live object: ``deleted``, or pending when the head no longer declares it."""
    if gone_at_head:
        return Drift(
            resource=d.ref,
            path=(),
            op=Op.REMOVE,
            decision=Decision.PENDING,
            reason=f"pending sync: removed from Git after the applied revision {revision or ''}".rstrip(),
            rule=Rule.PENDING_SYNC,
        )
    return Drift(
        resource=d.ref,
        path=(),
        op=Op.REMOVE,
        decision=Decision.DELETED,
        reason=f"declared in Git ({d.file}) but missing from the cluster",
        rule=Rule.MISSING_LIVE,
    )


def created_live(
    obj: LiveObject,
    *,
    policy: Policy,
    sensitive: tuple[tuple[Any, ...], ...],
    at_head: bool,
    revision: str | None,
    notes: list[str],
) -> Drift | None:
    """A live object Git does not declare: ``new`` when a person created it (``sensitive``: the policy's parsed
    sensitive-path patterns), pending when the head declares it; None when a controller or applier made it."""
    meta = obj.body.get("metadata") if isinstance(obj.body.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    refs = meta.get("ownerReferences") or []
    if any(isinstance(r, Mapping) and r.get("controller") is True for r in refs):
        return None
    own = parse_managed_fields(obj.body)
    if any(manager_role(policy, m.manager) is not Role.PERSON for m in own.managers):
        return None
    secret = obj.ref.is_secret
    hidden = secret or matches_within(sensitive, path=(), values=(obj.body,))
    body: Any = normalize(obj.body, ref=obj.ref, side=Side.LIVE).body
    body = _redacted_body(obj) if secret else (REDACTED if hidden else body)
    if at_head:
        return Drift(
            resource=obj.ref,
            path=(),
            op=Op.ADD,
            live=body,
            sensitive=hidden,
            decision=Decision.PENDING,
            reason=f"pending sync: added to Git after the applied revision {revision or ''}".rstrip(),
            rule=Rule.PENDING_SYNC,
        )
    first = min(own.managers, key=lambda m: m.time or "", default=None)
    if first is None:
        notes.append(f"{obj.ref}: no managedFields: could not tell who created it")
        reason = "not declared in Git (no managedFields: the creator is unknown)"
    else:
        when = f" at {first.time}" if first.time else ""
        reason = f"not declared in Git; created by {first.manager} ({first.operation}){when}"
    return Drift(
        resource=obj.ref,
        path=(),
        op=Op.ADD,
        live=body,
        manager=first.manager if first else None,
        operation=first.operation if first else None,
        time=first.time if first else None,
        decision=Decision.NEW,
        reason=reason,
        rule=Rule.CREATED_LIVE,
        sensitive=hidden,
    )


def _redacted_body(obj: LiveObject) -> dict[str, Any]:
    meta = obj.body.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else obj.ref.name
    return {"metadata": {"name": name}, "data": REDACTED}
