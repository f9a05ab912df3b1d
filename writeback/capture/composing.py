"""Compose every captured write of one object over its live state, in the order they happened. Pure.

One capture per person's write (``model.Capture``: keyed with its manager, time and resourceVersion), each with its
own change: the fields that differ from the version just before it. The GitOps controller may have reverted some
of them in between (and a revert of an atomic list, such as a VirtualService's ``http`` routes, takes back every
field in it), so no single captured object holds them all. :func:`compose` starts from the live object and puts
back, in time order, each capture's fields that the live object does not have, when the controller took them
(a field a controller such as the HPA changed since, or nobody's write, is left as live says):

- a field a later write by a person changed again belongs to that later write (its capture is *replaced* when
  nothing of it is left);
- the managedFields of the result give each put-back field to its capture's manager, at its time, so that the
  drift engine attributes it to that person;
- each capture comes back as a ``CapturedHotfix`` (reverted, with its fields; or replaced, naming the later write;
  or in Git) for the PR body, and as the fields it contributes, for ``settled``.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from writeback.capture.hotfixes import backport_body, owned_change
from writeback.drift.deciding import Role, manager_role
from writeback.drift.diffing import is_prefix
from writeback.drift.ownership import Ownership, canonical, fields_v1, parse_managed_fields, prune_fields_v1
from writeback.kube.paths import lookup_as_served, parse_path
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Segment, Select
from writeback.model import Capture, CapturedHotfix, FieldOwner, HotfixState, ManagerOperation
from writeback.settings import Policy

__all__ = ["Composed", "compose", "settled"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Composed:
    """The live object with the captured writes put back, and what became of each capture."""

    body: Mapping[str, Any]
    changed: bool  # anything was put back (else ``body`` is the live object)
    hotfixes: tuple[CapturedHotfix, ...] = ()  # reverted ones (carried by the PR), then replaced and in-Git ones
    fields: Mapping[str, tuple[FieldPath, ...]] = field(default_factory=dict)  # capture key -> the fields it gives
    replaced: Mapping[str, str] = field(default_factory=dict)  # capture key -> the key of the write that replaced it
    carried: frozenset[str] = frozenset()  # capture keys whose change Git carries (marked so, or applied by GitOps)
    holding: frozenset[str] = frozenset()  # capture keys whose fields all have their captured value in ``body``


def _paths(capture: Capture, body: Mapping[str, Any], live: Mapping[str, Any]) -> tuple[FieldPath, ...]:
    if capture.changed is None:
        return owned_change(body, live, manager=capture.manager)
    out = []
    for text in capture.changed:
        try:
            out.append(parse_path(text))
        except ValueError:
            continue  # written by another version of writeback: that field is not put back
    return tuple(out)


def compose(live: Mapping[str, Any], captures: Sequence[Capture], *, policy: Policy) -> Composed:
    """``live`` with every capture's change that it does not have put back, in time order (see the module)."""
    ordered = sorted(captures, key=lambda c: c.order)
    bodies = [backport_body(c, live=live) for c in ordered]
    paths = [_paths(c, b, live) for c, b in zip(ordered, bodies, strict=True)]
    owners = parse_managed_fields(live)
    writers = {(c.manager, c.operation) for c in ordered}
    out = copy.deepcopy(dict(live))
    hotfixes: list[CapturedHotfix] = []
    dropped: list[CapturedHotfix] = []
    contributed: dict[str, tuple[FieldPath, ...]] = {}
    replaced: dict[str, str] = {}
    carried: set[str] = set()
    holding: set[str] = set()
    put_back: list[tuple[Capture, list[FieldPath], Mapping[str, Any]]] = []
    for i, (capture, body) in enumerate(zip(ordered, bodies, strict=True)):
        later = [(ordered[j], q) for j in range(i + 1, len(ordered)) for q in paths[j]]
        mine = [p for p in paths[i] if not any(is_prefix(q, p) for _, q in later)]
        contributed[capture.key] = tuple(mine)
        if paths[i] and not mine:  # every field it changed, a person changed again later
            last = max((c for c, q in later if any(is_prefix(q, p) for p in paths[i])), key=lambda c: c.order)
            replaced[capture.key] = last.key
            dropped.append(_hotfix(capture, state=HotfixState.REPLACED, replaced_by=last))
            continue
        if capture.in_git or (mine and all(_applied_by_gitops(p, body, live, owners, policy) for p in mine)):
            carried.add(capture.key)
            dropped.append(_hotfix(capture, state=HotfixState.IN_GIT))
            continue
        missing = [p for p in mine if _value(body, p) != _value(live, p)
                   and _taken_back(owners.owner_of(p), policy, writers)]  # fmt: skip
        applied = [p for p in _in_order(missing, body) if _put(out, p, _value(body, p))]
        if applied:
            put_back.append((capture, applied, body))
            writer = _reverter(live, capture, policy=policy)
            hotfixes.append(_hotfix(capture, state=HotfixState.REVERTED, fields=tuple(applied), reverter=writer))
    if put_back:
        _own(out, live=live, put_back=put_back)
    for capture, body in zip(ordered, bodies, strict=True):  # what a plan of ``out`` judges for each capture
        if all(_value(out, p) == _value(body, p) for p in contributed[capture.key]):
            holding.add(capture.key)
    return Composed(body=out, changed=bool(put_back), hotfixes=(*hotfixes, *dropped), fields=contributed,
                    replaced=replaced, carried=frozenset(carried), holding=frozenset(holding))  # fmt: skip


def settled(composed: Composed, *, drifting: Sequence[FieldPath]) -> set[str]:
    """The captures (keys) whose change Git carries: none of the fields they contribute still differs from Git
    (``drifting``: the object's fields that do, not ignored)."""
    done = set(composed.carried)
    for key, fields in composed.fields.items():
        if key in composed.replaced or not fields or key not in composed.holding:
            continue  # (a field that does not hold the captured value shows no drift only because Git has another)
        if not any(is_prefix(p, d) or is_prefix(d, p) for p in fields for d in drifting):
            done.add(key)
    return done


def _applied_by_gitops(
    path: FieldPath, body: Mapping[str, Any], live: Mapping[str, Any], owners: Ownership, policy: Policy
) -> bool:
    """Live has the captured value, and the GitOps controller owns it: it applied it, so Git carries it."""
    owner = owners.owner_of(path)
    same = _value(body, path) == _value(live, path)
    return same and owner is not None and manager_role(policy, owner.manager) is Role.GITOPS


def _taken_back(owner: FieldOwner | None, policy: Policy, writers: Set[tuple[str, str]]) -> bool:
    """A field the GitOps controller owns now, or nobody (its apply removed it): taken back, so put back. So is one
    a captured writer owns without having changed it (a later write of an atomic list, such as a VirtualService's
    ``http``, owns all of it: the fields it did not change hold what the revert left). A field another manager owns
    was changed since by a controller (the HPA) or by a person whose write was not captured: the live object tells
    the truth there."""
    if owner is None or manager_role(policy, owner.manager) is Role.GITOPS:
        return True
    return (owner.manager, owner.operation) in writers


def _reverter(live: Mapping[str, Any], capture: Capture, *, policy: Policy) -> FieldOwner | None:
    """The GitOps manager's newest write at or after the capture (who took it back, and when)."""
    entries = [e for e in (live.get("metadata") or {}).get("managedFields") or [] if isinstance(e, Mapping)]
    after = [
        e for e in entries
        if manager_role(policy, str(e.get("manager", ""))) is Role.GITOPS
        and str(e.get("time") or "") >= (capture.time or "")
    ]  # fmt: skip
    if not after:
        return None
    e = max(after, key=lambda e: str(e.get("time") or ""))
    return FieldOwner(manager=str(e.get("manager", "")), operation=ManagerOperation.of(e.get("operation")),
                      time=str(e.get("time")) if e.get("time") else None)  # fmt: skip


def _hotfix(
    capture: Capture,
    *,
    state: HotfixState,
    fields: tuple[FieldPath, ...] = (),
    reverter: FieldOwner | None = None,
    replaced_by: Capture | None = None,
) -> CapturedHotfix:
    return CapturedHotfix(
        resource=capture.ref,
        manager=capture.manager,
        operation=capture.operation,
        time=capture.time,
        reverted_at=reverter.time if reverter else None,
        reverted_by=reverter.manager if reverter else None,
        fields=fields,
        state=state,
        replaced_by=replaced_by.manager if replaced_by else None,
        replaced_at=replaced_by.time if replaced_by else None,
    )


# ---------------------------------------------------------------- values at paths


def _value(body: Any, path: FieldPath) -> Any:
    return lookup_as_served(body, path)


def _in_order(paths: Sequence[FieldPath], body: Mapping[str, Any]) -> list[FieldPath]:
    """Sets first, then removals from the last position back (a removal by position moves the ones after it)."""
    sets = [p for p in paths if _value(body, p) is not ABSENT]
    removals = [p for p in paths if _value(body, p) is ABSENT]
    removals.sort(key=lambda p: [s.index if isinstance(s, Index) else 0 for s in p], reverse=True)
    return sets + removals


def _child(node: Any, seg: Segment) -> Any:
    if isinstance(seg, Key):
        return node.get(seg.name, ABSENT) if isinstance(node, dict) else ABSENT
    if not isinstance(node, list):
        return ABSENT
    if isinstance(seg, Index):
        return node[seg.index] if seg.index < len(node) else ABSENT
    return next((item for item in node if seg.matches(item)), ABSENT)


def _put(body: dict[str, Any], path: FieldPath, value: Any) -> bool:
    """Set (or, for ABSENT, remove) the value at ``path``; missing maps on the way are made. False when the place
    cannot be reached (a list item that is not there)."""
    if not path:
        return False
    node: Any = body
    for seg, nxt in itertools.pairwise(path):
        child = _child(node, seg)
        if child is ABSENT and isinstance(seg, Key) and isinstance(node, dict) and value is not ABSENT:
            child = node[seg.name] = {} if isinstance(nxt, Key) else []
        if child is ABSENT or child is None:
            return False
        node = child
    last, value = path[-1], copy.deepcopy(value)
    if isinstance(last, Key) and isinstance(node, dict):
        if value is ABSENT:
            node.pop(last.name, None)
        else:
            node[last.name] = value
        return True
    if not isinstance(node, list):
        return False
    if isinstance(last, Select):
        at = next((i for i, item in enumerate(node) if last.matches(item)), None)
        if value is ABSENT:
            if at is not None:
                del node[at]
        elif at is None:
            node.append(value)
        else:
            node[at] = value
        return True
    if isinstance(last, Index):
        if value is ABSENT:
            if last.index < len(node):
                del node[last.index]
            return True
        if last.index < len(node):
            node[last.index] = value
            return True
        if last.index == len(node):
            node.append(value)
            return True
    return False


# ---------------------------------------------------------------- managedFields


def _own(out: dict[str, Any], *, live: Mapping[str, Any], put_back: Sequence[tuple[Capture, list[FieldPath],
         Mapping[str, Any]]]) -> None:  # fmt: skip
    """Give each put-back field to its capture's manager (at its time), taken from every other entry, in order."""
    meta = out.setdefault("metadata", {})
    entries = [dict(e) for e in meta.get("managedFields") or [] if isinstance(e, Mapping)]
    for capture, fields, body in put_back:
        for e in entries:
            if e.get("subresource", "") != "status" and isinstance(e.get("fieldsV1"), Mapping):
                e["fieldsV1"] = prune_fields_v1(e["fieldsV1"], live=out, paths=fields)
        mine = next((e for e in entries if e.get("manager") == capture.manager
                     and e.get("operation") == capture.operation and not e.get("subresource")), None)  # fmt: skip
        if mine is None:
            version = str(body.get("apiVersion") or live.get("apiVersion") or "")
            mine = {"manager": capture.manager, "operation": capture.operation, "apiVersion": version,
                    "fieldsType": "FieldsV1", "fieldsV1": {}}  # fmt: skip
            entries.append(mine)
        if capture.time and str(mine.get("time") or "") < capture.time:
            mine["time"] = capture.time
        mine["fieldsV1"] = _union(mine.get("fieldsV1") or {}, fields_v1([canonical(p) for p in fields]))
    meta["managedFields"] = [e for e in entries if e.get("fieldsV1") or e.get("subresource") == "status"]


def _union(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in a.items()}
    for k, v in b.items():
        if k in out and isinstance(out[k], Mapping) and isinstance(v, Mapping):
            merged = _union(out[k], v)
            if not out[k] and v:  # it owned the node as a leaf: it still owns the node itself
                merged["."] = {}
            out[k] = merged
        else:
            out[k] = copy.deepcopy(v)
    return out
