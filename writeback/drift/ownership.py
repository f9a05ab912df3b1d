"""Who owns which field: ``metadata.managedFields`` (FieldsV1) as field paths. Pure.

FieldsV1 is a tree of keys: ``f:<name>`` a field, ``k:{json}`` a keyed list item (its key
fields as a JSON object), ``v:<json>`` an item of a set list (by value), ``i:<n>`` an item by
position, and ``.`` the node itself. An empty mapping ``{}`` marks an owned leaf (a scalar, or
an atomic list or map owned as a whole).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from writeback.kube.paths import format_path
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Segment, Select, Wildcard, scalar_text
from writeback.model import FieldOwner, ManagerOperation

__all__ = [
    "Ownership",
    "canonical",
    "entry_owner",
    "fields_v1",
    "generalize",
    "parse_fields_v1",
    "parse_managed_fields",
    "prune_fields_v1",
]


def canonical(path: Sequence[Segment]) -> FieldPath:
    """The path with every selector's keys in sorted order (FieldsV1 sorts them too)."""
    return tuple(Select(tuple(sorted(s.keys))) if isinstance(s, Select) else s for s in path)


def generalize(path: Sequence[Segment]) -> str:
    """A path with every list item replaced by ``[*]``: the key for list-map keys."""
    return format_path([Wildcard(item=True) if not isinstance(s, Key) else s for s in path])


def _child(value: Any, seg: Segment) -> Any:
    if isinstance(seg, Key):
        return value.get(seg.name, ABSENT) if isinstance(value, Mapping) else ABSENT
    if not isinstance(value, list):
        return ABSENT
    if isinstance(seg, Index):
        return value[seg.index] if seg.index < len(value) else ABSENT
    return next((item for item in value if seg.matches(item)), ABSENT)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    path: FieldPath
    leaf: bool  # an owned leaf ({}), as opposed to an inner node or a "." marker
    self_marker: bool = False


def parse_fields_v1(
    tree: Mapping[str, Any], *, live: Any = ABSENT, keys: dict[str, tuple[str, ...]] | None = None
) -> list[_Entry]:
    """Flatten a FieldsV1 tree into entries. ``v:`` items are resolved to positions in ``live``;
    the key fields of every ``k:`` item are recorded in ``keys`` (by generalized list path)."""
    out: list[_Entry] = []

    def walk(node: Mapping[str, Any], path: FieldPath, value: Any) -> None:
        for raw, sub in node.items():
            if raw == ".":
                out.append(_Entry(path=path, leaf=False, self_marker=True))
                continue
            seg = _segment(raw, path=path, value=value, keys=keys)
            if seg is None:
                continue
            child = (*path, seg)
            if isinstance(sub, Mapping) and sub:
                out.append(_Entry(path=child, leaf=False))
                walk(sub, child, _child(value, seg))
            else:
                out.append(_Entry(path=child, leaf=True))

    walk(tree, (), live)
    return out


# The segment of each ``f:``, ``k:`` and ``i:`` key seen (they depend on the key alone; segments are immutable), and
# a ``k:`` key's field names: the same keys recur in every object of a kind.
_SEGMENTS: dict[str, tuple[Segment, tuple[str, ...] | None]] = {}
_SEGMENTS_MAX = 50_000
_Owned = dict[FieldPath, list[FieldOwner]]


def _segment(raw: Any, *, path: FieldPath, value: Any, keys: dict[str, tuple[str, ...]] | None) -> Segment | None:
    if not isinstance(raw, str):
        return None  # a live dump read from YAML may hold any key; FieldsV1 keys are strings
    known = _SEGMENTS.get(raw)
    if known is not None:
        if known[1] is not None and keys is not None:
            keys.setdefault(generalize(path), known[1])
        return known[0]
    prefix, _, rest = raw.partition(":")
    if prefix == "f" and rest:
        return _known(raw, Key(rest), None)
    try:
        decoded = json.loads(rest)
    except ValueError:
        return None
    if prefix == "k" and isinstance(decoded, dict) and decoded:
        names = tuple(sorted(decoded))
        if keys is not None:
            keys.setdefault(generalize(path), names)
        return _known(raw, Select(tuple((k, scalar_text(decoded[k])) for k in names)), names)
    if prefix == "i" and isinstance(decoded, int) and decoded >= 0:
        return _known(raw, Index(decoded), None)
    if prefix == "v" and isinstance(value, list):
        for pos, item in enumerate(value):
            if item == decoded and type(item) is type(decoded):
                return Index(pos)
    return None


def _known(raw: str, seg: Segment, names: tuple[str, ...] | None) -> Segment:
    if len(_SEGMENTS) >= _SEGMENTS_MAX:
        _SEGMENTS.clear()
    _SEGMENTS[raw] = (seg, names)
    return seg


def _flatten(
    tree: Mapping[str, Any],
    *,
    live: Any,
    keys: dict[str, tuple[str, ...]],
    owner: FieldOwner,
    owned: tuple[_Owned, _Owned, _Owned],
) -> None:
    """:func:`parse_fields_v1` of one managedFields entry, each path straight into its table of ``owned`` (leaves,
    inner nodes, ``.`` markers), in the same order."""
    leaves, nodes, selves = owned

    def walk(node: Mapping[str, Any], path: FieldPath, value: Any) -> None:
        for raw, sub in node.items():
            if raw == ".":
                selves.setdefault(path, []).append(owner)
                continue
            seg = _segment(raw, path=path, value=value, keys=keys)
            if seg is None:
                continue
            child = (*path, seg)
            if isinstance(sub, Mapping) and sub:
                nodes.setdefault(child, []).append(owner)
                walk(sub, child, _child(value, seg))
            else:
                leaves.setdefault(child, []).append(owner)

    walk(tree, (), live)


@dataclass(frozen=True, slots=True, kw_only=True)
class Ownership:
    """Field paths of one live object mapped to their owners."""

    present: bool  # the object carried managedFields at all
    managers: tuple[FieldOwner, ...] = ()
    list_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    _leaves: Mapping[FieldPath, tuple[FieldOwner, ...]] = field(default_factory=dict)
    _nodes: Mapping[FieldPath, tuple[FieldOwner, ...]] = field(default_factory=dict)
    _selves: Mapping[FieldPath, tuple[FieldOwner, ...]] = field(default_factory=dict)

    def owners_of(self, path: Sequence[Segment], *, subtree: bool = False) -> tuple[FieldOwner, ...]:
        """Owners of ``path``: the leaf itself, else the nearest atomic ancestor; with ``subtree``
        (a whole map or list item) the item's ``.`` marker, else whoever owns most fields below it."""
        p = canonical(path)
        if p in self._leaves:
            return self._leaves[p]
        if subtree:
            if p in self._selves:
                return self._selves[p]
            counts: dict[FieldOwner, int] = {}
            for q, owners in self._leaves.items():
                if q[: len(p)] == p:
                    for o in owners:
                        counts[o] = counts.get(o, 0) + 1
            if counts:
                return tuple(sorted(counts, key=lambda o: -counts[o]))
        for n in range(len(p) - 1, 0, -1):
            if p[:n] in self._leaves:
                return self._leaves[p[:n]]
        return ()

    def owner_of(self, path: Sequence[Segment], *, subtree: bool = False) -> FieldOwner | None:
        """The most recent owner (shared ownership happens when several appliers agree)."""
        owners = self.owners_of(path, subtree=subtree)
        if not owners:
            return None
        if subtree:
            return owners[0]
        # Later writes win; on equal times, the later managedFields entry.
        return max(enumerate(owners), key=lambda io: (io[1].time or "", io[0]))[1]


def entry_owner(entry: Mapping[str, Any]) -> FieldOwner:
    """Who wrote one managedFields entry, how and when (its fields aside)."""
    return FieldOwner(
        manager=str(entry.get("manager") or "unknown"),
        operation=ManagerOperation.of(entry.get("operation")),
        subresource=str(entry.get("subresource") or ""),
        time=str(entry["time"]) if entry.get("time") else None,
    )


def parse_managed_fields(body: Mapping[str, Any]) -> Ownership:
    """Build the ownership map of a live object from its ``metadata.managedFields``."""
    meta = body.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, Mapping) else None
    if not isinstance(entries, list) or not entries:
        return Ownership(present=False)
    keys: dict[str, tuple[str, ...]] = {}
    leaves: dict[FieldPath, list[FieldOwner]] = {}
    nodes: dict[FieldPath, list[FieldOwner]] = {}
    selves: dict[FieldPath, list[FieldOwner]] = {}
    managers: list[FieldOwner] = []
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        owner = entry_owner(entry)
        managers.append(owner)
        tree = entry.get("fieldsV1")
        if not isinstance(tree, Mapping):
            continue
        _flatten(tree, live=body, keys=keys, owner=owner, owned=(leaves, nodes, selves))
    return Ownership(
        present=True,
        managers=tuple(managers),
        list_keys=keys,
        _leaves={k: tuple(v) for k, v in leaves.items()},
        _nodes={k: tuple(v) for k, v in nodes.items()},
        _selves={k: tuple(v) for k, v in selves.items()},
    )


# ---------------------------------------------------------------- composing ownership (hotfix capture)


def _raw(seg: Segment) -> str:
    if isinstance(seg, Key):
        return f"f:{seg.name}"
    if isinstance(seg, Select):
        return "k:" + json.dumps(dict(seg.keys), sort_keys=True, separators=(",", ":"))
    if isinstance(seg, Index):
        return f"i:{seg.index}"
    raise ValueError(f"not a field path segment: {seg!r}")


def fields_v1(paths: Sequence[FieldPath]) -> dict[str, Any]:
    """A FieldsV1 tree that owns exactly ``paths`` (a path that is also the parent of another gets a ``.``)."""
    tree: dict[str, Any] = {}
    for path in sorted(paths, key=len):
        if not path:
            continue
        node = tree
        for seg in path[:-1]:
            node = node.setdefault(_raw(seg), {})
        node.setdefault(_raw(path[-1]), {})
    return _mark_parents(tree, set(map(canonical, paths)), ())


def _mark_parents(tree: dict[str, Any], owned: set[FieldPath], path: FieldPath) -> dict[str, Any]:
    for raw, sub in tree.items():
        if raw == "." or not isinstance(sub, dict):
            continue
        seg = _segment(raw, path=path, value=ABSENT, keys=None)
        if seg is None:
            continue
        child = canonical((*path, seg))
        if sub and child in owned:
            sub["."] = {}
        _mark_parents(sub, owned, child)
    return tree


def prune_fields_v1(tree: Mapping[str, Any], *, live: Any, paths: Sequence[FieldPath]) -> dict[str, Any]:
    """``tree`` without the fields at or below any of ``paths`` (resolved against ``live``, as
    ``parse_fields_v1``); a node left with nothing is removed too. The other managers' entries lose what a person's
    captured write takes over (an Update takes ownership of the fields it changes)."""
    gone = {canonical(p) for p in paths}

    def covered(path: FieldPath) -> bool:
        return any(path[:n] in gone for n in range(1, len(path) + 1))

    def walk(node: Mapping[str, Any], path: FieldPath, value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for raw, sub in node.items():
            if raw == ".":
                out[raw] = sub
                continue
            seg = _segment(raw, path=path, value=value, keys=None)
            if seg is None:
                out[raw] = sub
                continue
            child = canonical((*path, seg))
            if covered(child):
                continue
            if isinstance(sub, Mapping) and sub:
                kept = walk(sub, child, _child(value, seg))
                if kept:  # (only "." left: the manager still owns the item itself)
                    out[raw] = kept
            else:
                out[raw] = sub
        return out

    return walk(tree, (), live)
