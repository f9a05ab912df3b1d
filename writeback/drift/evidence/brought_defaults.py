"""Defaults that arrive with a person's change are not the person's change (issue 15). Pure.

A person who adds a probe, a container, a port or a volume live, who sets ``sessionAffinity: ClientIP`` or turns
a Service into a NodePort, makes the API server fill in more: the probe's thresholds, the container's termination
message path, the port's protocol, the affinity timeout, allocated node ports. Those are not what the person did;
written into Git they would be noise for reviewers and pin values the server chooses anyway.

``separate`` takes one object's decided drifts and the defaults the decisions dropped, and returns:

- each added item or map of a person with the fields the server filled in removed from its value (list-key
  fields stay: they name the item), the removed fields as ``ignore`` drifts "filled in by the API server because
  of <the person's field>", so that the PR lists them under "not written back";
- each dropped default that the person's change brought as such an ``ignore`` drift, when evidence shows it came
  with the change: it sits in a structure Git does not have that the person added into, or (cluster mode) the
  dry-run create of Git's manifest alone lacks it;
- the other dropped defaults, which Git's manifest alone gets from the server, stay dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from writeback.drift.diffing import Leaf
from writeback.drift.evidence.defaults import Filled, strip_defaults
from writeback.kube.paths import format_path, lookup_as_served, without
from writeback.kube.pathtypes import ABSENT, FieldPath, Key, Select
from writeback.kube.refs import ObjectRef
from writeback.model import Decision, Drift, Dropped, Op, Rule, Side

__all__ = ["DroppedDefault", "separate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DroppedDefault:
    """A difference the decisions found to be a server default (``rule``: why)."""

    leaf: Leaf
    rule: str


def separate(
    *,
    ref: ObjectRef,
    drifts: Sequence[Drift],
    defaults: Sequence[DroppedDefault],
    git: Mapping[str, Any],
    git_alone: Mapping[str, Any] | None = None,
) -> tuple[list[Drift], list[Dropped]]:
    """One object's drifts with the defaults its person's changes brought told apart (see the module docstring).

    ``git``: the normalized Git body; ``git_alone``: the normalized dry-run create of Git's manifest alone, if any.
    """
    out: list[Drift] = []
    person = [d for d in drifts if d.decision.by_person and d.op is not Op.REMOVE]
    for d in drifts:
        if d not in person or d.sensitive or not isinstance(d.live, Mapping | list):
            out.append(d)
            continue
        kept, brought = _strip(ref, d)
        out.append(kept)
        out.extend(brought)
    dropped: list[Dropped] = []
    for x in defaults:
        cause = _cause(x.leaf.path, person, git, git_alone)
        if cause is None:
            dropped.append(Dropped(resource=ref, path=x.leaf.path, rule=x.rule, side=Side.LIVE))
            continue
        out.append(_brought(ref, x.leaf.path, x.leaf.live, cause=cause))
    return out, dropped


def _strip(ref: ObjectRef, d: Drift) -> tuple[Drift, list[Drift]]:
    """A person's added item or map without what the server filled in, and those fields as ``ignore`` drifts."""
    stripped = strip_defaults(kind=ref.kind, path=d.path, value=d.live)
    keys = set(dict(d.path[-1].keys)) if d.path and isinstance(d.path[-1], Select) else set()
    removed = [f for f in stripped.removed if not _names_the_item(f.path, d.path, keys)]
    if not removed or stripped.value is ABSENT:
        return d, []  # nothing filled in, or all of it looks filled in: then it is the person's value as written
    value = d.live
    for f in removed:
        value = without(value, f.path[len(d.path) :])
    brought = [_brought(ref, f.path, f.value, cause=d, allocated=f.how is Filled.ALLOCATED) for f in removed]
    return replace(d, live=value), brought


def _names_the_item(field: FieldPath, item: FieldPath, keys: set[str]) -> bool:
    """A key field of the added list item itself (``protocol`` of ``ports[containerPort=80,protocol=TCP]``): it
    names the item in Git too, defaulted or not."""
    return len(field) == len(item) + 1 and isinstance(field[-1], Key) and field[-1].name in keys


def _cause(path: FieldPath, person: Sequence[Drift], git: Mapping[str, Any], git_alone: Any) -> Drift | None:
    """The person's drift that brought the default at ``path``, or None when Git's manifest alone gets it."""
    if not person:
        return None
    if git_alone is not None and lookup_as_served(git_alone, path) is not ABSENT:
        return None  # the server fills it in for Git's manifest alone
    depth = _declared_depth(path, git)  # path[:depth] exists in Git; path[depth] starts what Git lacks
    new = path[: depth + 1]
    inside = [d for d in person if d.path[: len(new)] == new]
    if inside:
        return max(inside, key=lambda d: _common(d.path, path))
    if git_alone is None:
        return None  # offline, a default beside the change may as well be Git's own: it stays a plain default
    # cluster mode: Git alone lacks it, so the person's change brought it; name the closest changed field
    siblings = [d for d in person if d.path[:depth] == path[:depth]]
    return max(siblings, key=lambda d: _common(d.path, path)) if siblings else person[0]


def _declared_depth(path: FieldPath, git: Mapping[str, Any]) -> int:
    depth = 0
    while depth < len(path) and lookup_as_served(git, path[: depth + 1]) is not ABSENT:
        depth += 1
    return depth


def _common(a: FieldPath, b: FieldPath) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _brought(ref: ObjectRef, path: FieldPath, value: Any, *, cause: Drift, allocated: bool = False) -> Drift:
    what = "allocated" if allocated else "filled in"
    return Drift(
        resource=ref,
        path=path,
        op=Op.ADD,
        live=value,
        decision=Decision.IGNORE,
        reason=f"{what} by the API server because of {format_path(cause.path)} ({cause.manager or 'a person'}'s "
        f"change); not written back",
        rule=Rule.BROUGHT_DEFAULT,
    )
