"""Leaf-level diff of two normalized bodies, with keyed lists matched by their keys. Pure.

Maps are compared key by key down to the leaves. Keyed lists (containers, env, ports, ...)
are matched by their list-map keys, so reordering is no drift, and an item present on one
side only is one difference for the whole item. Atomic lists are compared by position.
Absent, ``null``, ``{}`` and ``[]`` are all "not set", and so is ``""`` outside maps of strings (the API server
stores an empty string field as unset).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.drift.listkeys import KeyResolver, item_selector
from writeback.drift.normalizing import is_empty
from writeback.kube.paths import key
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Segment, Select
from writeback.kube.quantities import values_equal
from writeback.model import Op

__all__ = ["Leaf", "diff", "is_prefix"]

Equal = Callable[..., bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class Leaf:
    """One raw difference. ``op`` is the edit Git needs to match live."""

    path: FieldPath
    op: Op
    live: Any = ABSENT
    git: Any = ABSENT
    item: bool = False  # a whole keyed-list item present on one side only


def is_prefix(a: Sequence[Segment], b: Sequence[Segment]) -> bool:
    """Is ``a`` a prefix of ``b`` (or equal)?"""
    return len(a) <= len(b) and tuple(b[: len(a)]) == tuple(a)


def _selectors(items: list[Any], keys: tuple[str, ...]) -> list[Select] | None:
    sels = [item_selector(item, keys) for item in items]
    if any(s is None for s in sels):
        return None
    out = [s for s in sels if s is not None]
    return out if len(set(out)) == len(out) else None


def diff(*, live: Any, git: Any, keys: KeyResolver, equal: Equal = values_equal, at: FieldPath = ()) -> list[Leaf]:
    """Every leaf where ``live`` and ``git`` differ (``at``: where these values sit in the object)."""
    out: list[Leaf] = []
    _walk(out, at, live, git, keys, equal)
    return out


# The walkers append to ``out`` (in document order) rather than yield: nested generators cost a frame per level.


# Maps of strings, where "" is a value the API server keeps (everywhere else a "" string field is stored as unset).
_STRING_MAPS = frozenset(
    {"data", "binaryData", "stringData", "labels", "annotations", "nodeSelector", "matchLabels", "selector",
     "parameters"}
)  # fmt: skip


def _unset(value: Any, path: FieldPath) -> bool:
    """Absent, null, {}, [], or "" in a field the API server drops when it is empty (an ``omitempty`` string)."""
    if is_empty(value):
        return True
    if value != "" or not isinstance(value, str) or not path or not isinstance(path[-1], Key):
        return False
    return not (len(path) >= 2 and isinstance(path[-2], Key) and path[-2].name in _STRING_MAPS)


# Scalars that are never "not set" unless they are "" (None is, and is handled by the general walk).
_SCALARS = frozenset({str, int, float, bool})
_SCALARS_OR_NONE = frozenset({str, int, float, bool, type(None)})


def _walk(out: list[Leaf], path: FieldPath, lv: Any, gv: Any, keys: KeyResolver, equal: Equal) -> None:
    if _unset(lv, path) and _unset(gv, path):
        return
    if is_empty(gv):
        _one_side(out, path, lv, keys, live_side=True, other=gv)
        return
    if is_empty(lv):
        _one_side(out, path, gv, keys, live_side=False, other=lv)
        return
    if isinstance(lv, dict) and isinstance(gv, dict):  # normalized bodies are plain dicts and lists
        _maps(out, path, lv, gv, keys, equal)
        return
    if isinstance(lv, list) and isinstance(gv, list):
        _lists(out, path, lv, gv, keys, equal)
        return
    if isinstance(lv, dict | list) or isinstance(gv, dict | list) or not equal(lv, gv, path=path):
        out.append(Leaf(path=path, op=Op.CHANGE, live=lv, git=gv))


def _maps(out: list[Leaf], path: FieldPath, lv: dict[Any, Any], gv: dict[Any, Any], keys: KeyResolver,
          equal: Equal) -> None:  # fmt: skip
    """Two maps, key by key (live's keys in order, then Git's other keys). The commonest children take a shortcut
    to what ``_walk`` would find too: equal scalars of one type and identical maps or lists (no difference:
    ``values_equal`` holds throughout), and a scalar live has and Git lacks (one added leaf)."""
    plain_equal = equal is values_equal
    scalars, with_none = _SCALARS, _SCALARS_OR_NONE
    for k, a in lv.items():
        b = gv.get(k, ABSENT)
        t = type(a)
        if plain_equal and t is type(b):
            if t in with_none:
                if a == b:
                    continue
            elif (t is dict or t is list) and a == b and _same(a, b):
                continue
        if b is ABSENT and t in scalars and a != "":
            out.append(Leaf(path=(*path, key(k)), op=Op.ADD, live=a, git=ABSENT))
            continue
        _walk(out, (*path, key(k)), a, b, keys, equal)
    for k, b in gv.items():
        if k not in lv:
            _walk(out, (*path, key(k)), ABSENT, b, keys, equal)


def _same(a: Any, b: Any) -> bool:
    """The same plain data, types included (``==`` takes ``True`` for ``1``): then the diff finds nothing in it."""
    t = type(a)
    if t is not type(b):
        return False
    if t is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            w = b.get(k, ABSENT)
            tv = type(v)
            if tv is type(w) and tv in _SCALARS_OR_NONE:
                if v != w:
                    return False
            elif not _same(v, w):
                return False
        return True
    if t is list:
        return len(a) == len(b) and all(map(_same, a, b))
    return t in _SCALARS_OR_NONE and bool(a == b)


def _lists(out: list[Leaf], path: FieldPath, lv: list[Any], gv: list[Any], keys: KeyResolver, equal: Equal) -> None:
    key_names = keys(path)
    if key_names:
        ls, gs = _selectors(lv, key_names), _selectors(gv, key_names)
        if ls is not None and gs is not None:
            g_by = dict(zip(gs, gv, strict=True))
            plain_equal = equal is values_equal
            for sel, item in zip(ls, lv, strict=True):
                if sel in g_by:
                    other = g_by[sel]
                    if not (plain_equal and item == other and _same(item, other)):
                        _walk(out, (*path, sel), item, other, keys, equal)
                else:
                    out.append(Leaf(path=(*path, sel), op=Op.ADD, live=item, item=True))
            l_set = set(ls)
            for sel, item in zip(gs, gv, strict=True):
                if sel not in l_set:
                    out.append(Leaf(path=(*path, sel), op=Op.REMOVE, git=item, item=True))
            return
    for i in range(max(len(lv), len(gv))):
        li = lv[i] if i < len(lv) else ABSENT
        gi = gv[i] if i < len(gv) else ABSENT
        p = (*path, Index(i))
        if li is ABSENT:
            out.append(Leaf(path=p, op=Op.REMOVE, git=gi))
        elif gi is ABSENT:
            out.append(Leaf(path=p, op=Op.ADD, live=li))
        else:
            _walk(out, p, li, gi, keys, equal)


def _one_side(out: list[Leaf], path: FieldPath, value: Any, keys: KeyResolver, *, live_side: bool, other: Any) -> None:
    """Leaves of a subtree present on one side only."""
    if is_empty(value):
        return
    if isinstance(value, dict):
        scalars = _SCALARS
        for k, v in value.items():
            if type(v) in scalars:  # a scalar leaf ("" included: it is set on one side only)
                out.append(_leaf((*path, key(k)), v, live_side=live_side, other=ABSENT, item=False))
            else:
                _one_side(out, (*path, key(k)), v, keys, live_side=live_side, other=ABSENT)
        return
    if isinstance(value, list):
        key_names = keys(path)
        sels = _selectors(value, key_names) if key_names else None
        if sels is not None:
            for sel, item in zip(sels, value, strict=True):
                out.append(_leaf((*path, sel), item, live_side=live_side, other=ABSENT, item=True))
            return
    out.append(_leaf(path, value, live_side=live_side, other=other, item=False))


def _leaf(path: FieldPath, value: Any, *, live_side: bool, other: Any, item: bool) -> Leaf:
    other = None if other is None else ABSENT
    if live_side:
        return Leaf(path=path, op=Op.ADD, live=value, git=other, item=item)
    return Leaf(path=path, op=Op.REMOVE, live=other, git=value, item=item)
