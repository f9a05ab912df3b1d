"""Take sensitive values out of an object before it is stored, and put the live ones back for use. Pure.

A hotfix capture is written to durable state (a file, a ConfigMap); values at ``policy.sensitive_paths`` must
never sit there. ``scrub`` removes every field a pattern reaches (also inside the JSON of the
``kubectl.kubernetes.io/last-applied-configuration`` annotation) and names what it removed, without the value.
``restore`` fills those paths from the current live object, so a removed field is never false drift; where the
live object has no such field (a person added it), a placeholder stands in, so the drift that adds it is still
recognised as sensitive (report-only) instead of being written back without its value.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.drift.listkeys import KeyResolver, item_selector, resolver
from writeback.drift.ownership import parse_managed_fields
from writeback.drift.subtree_matching import matches_within
from writeback.kube.paths import lookup_as_served, match
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, PatternSegment, Segment, Select, scalar_text
from writeback.kube.wellknown import LAST_APPLIED, last_applied

__all__ = ["LAST_APPLIED", "PLACEHOLDER", "Scrubbed", "restore", "scrub"]

# Stands in for a sensitive value a capture removed and the live object does not have.
PLACEHOLDER = "(sensitive value: not captured)"

Patterns = Sequence[Sequence[PatternSegment]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scrubbed:
    body: dict[str, Any]
    removed: tuple[FieldPath, ...] = ()  # paths removed from the object
    removed_last_applied: tuple[FieldPath, ...] = ()  # paths removed inside the last-applied annotation's JSON


class _Gone:
    pass


_GONE = _Gone()


class _Walk:
    def __init__(self, *, patterns: Patterns, keys: KeyResolver) -> None:
        self.patterns = patterns
        self.keys = keys
        self.removed: list[FieldPath] = []

    def hit(self, alts: Sequence[FieldPath]) -> bool:
        return any(match(p, a, prefix=False) for p in self.patterns for a in alts)

    def node(self, value: Any, *, alts: Sequence[FieldPath], at: FieldPath) -> Any:
        """``value`` without its sensitive fields, or ``_GONE``; ``alts``: every way a pattern may address it."""
        if self.hit(alts):
            self.removed.append(at)
            return _GONE
        if not any(matches_within(self.patterns, path=a, values=(value,)) for a in alts):
            return copy.deepcopy(value)
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                child = self.node(v, alts=[(*a, Key(str(k))) for a in alts], at=(*at, Key(str(k))))
                if child is not _GONE:
                    out[k] = child
            return out
        if isinstance(value, list):
            return self.items(value, alts=alts, at=at)
        return copy.deepcopy(value)

    def items(self, value: list[Any], *, alts: Sequence[FieldPath], at: FieldPath) -> Any:
        mark = len(self.removed)
        names = self.keys(at)
        sels = [item_selector(item, names) for item in value] if names else []
        keyed = bool(sels) and None not in sels and len(set(sels)) == len(sels)
        out = []
        for i, item in enumerate(value):
            item_alts = [(*a, Index(i)) for a in alts]
            if isinstance(item, Mapping):
                scalars = tuple(
                    (str(k), scalar_text(v)) for k, v in item.items() if isinstance(v, str | int | float | bool)
                )
                if scalars:
                    item_alts += [(*a, Select(keys=scalars)) for a in alts]
            seg: Segment = Index(i)
            sel = sels[i] if keyed else None
            if sel is not None and not any(self.hit([(*a, Key(name)) for a in item_alts]) for name, _ in sel.keys):
                seg = sel  # addressed by its key, unless the key itself is sensitive (the path must not show it)
            child = self.node(item, alts=item_alts, at=(*at, seg))
            if child is not _GONE:
                out.append(child)
            elif isinstance(seg, Index):
                # Removing an item by position would shift the rest: the whole list goes, and comes back whole.
                del self.removed[mark:]
                self.removed.append(at)
                return _GONE
        return out


def _walk(body: Mapping[str, Any], *, patterns: Patterns, keys: KeyResolver) -> tuple[Any, list[FieldPath]]:
    walk = _Walk(patterns=patterns, keys=keys)
    out = walk.node(body, alts=[()], at=())
    return ({} if out is _GONE else out), walk.removed


def _annotations(body: Any) -> Any:
    meta = body.get("metadata") if isinstance(body, Mapping) else None
    return meta.get("annotations") if isinstance(meta, Mapping) else None


def _dump(doc: Any, *, like: str) -> str:
    return json.dumps(doc, separators=(",", ":")) + ("\n" if like.endswith("\n") else "")


def scrub(body: Mapping[str, Any], *, patterns: Patterns, kind: str) -> Scrubbed:
    """``body`` (copied) without any field a pattern reaches; the removed paths name no value."""
    if not patterns or (not matches_within(patterns, path=(), values=(body,)) and last_applied(body) is None):
        return Scrubbed(body=copy.deepcopy(dict(body)))
    keys = resolver(kind=kind, learned=parse_managed_fields(body).list_keys)
    out, removed = _walk(body, patterns=patterns, keys=keys)
    inner_removed: list[FieldPath] = []
    applied = last_applied(out)
    if applied is not None:
        inner, inner_removed = _walk(applied, patterns=patterns, keys=resolver(kind=kind, learned={}))
        if inner_removed:
            notes = _annotations(out)
            notes[LAST_APPLIED] = _dump(inner, like=notes[LAST_APPLIED])
    return Scrubbed(body=out, removed=tuple(removed), removed_last_applied=tuple(inner_removed))


def _put(body: Any, *, source: Any, paths: Sequence[FieldPath]) -> None:
    for path in paths:
        if not path:
            continue
        parent = lookup_as_served(body, path[:-1])
        value = lookup_as_served(source, path)
        last = path[-1]
        if isinstance(last, Key):
            if isinstance(parent, dict):
                parent[last.name] = PLACEHOLDER if value is ABSENT else copy.deepcopy(value)
        elif isinstance(last, Select) and isinstance(parent, list) and value is not ABSENT:
            # A whole keyed item: back at its live position (a person's new sensitive item is not restored).
            items = lookup_as_served(source, path[:-1])
            at = next((i for i, x in enumerate(items) if x is value), len(parent))
            parent.insert(min(at, len(parent)), copy.deepcopy(value))


def restore(
    body: Mapping[str, Any],
    *,
    live: Mapping[str, Any],
    removed: Sequence[FieldPath],
    removed_last_applied: Sequence[FieldPath] = (),
) -> dict[str, Any]:
    """``body`` (copied) with every removed path taken from ``live`` (a placeholder where live has none)."""
    out = copy.deepcopy(dict(body))
    _put(out, source=live, paths=removed)
    applied = last_applied(out)
    if removed_last_applied and applied is not None:
        _put(applied, source=last_applied(live) or {}, paths=removed_last_applied)
        notes = _annotations(out)
        notes[LAST_APPLIED] = _dump(applied, like=notes[LAST_APPLIED])
    return out
