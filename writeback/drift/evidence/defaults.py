"""The fields the API server fills in, for offline mode and as a first check. Pure.

The constants are generated from the real API server (``writeback.kube.kinds.data()``: every field that a dry-run
create of a skeleton object came back with, by kind and path, ``[*]`` for list items). A field whose value is a
relation, not a constant, names one of the few ``DERIVED`` rules of ``core.derivations``. A value other than the
default is never explained away.

Allocated fields (cluster IPs, node ports, a Job's selector) are marked as such: they are no default
(``is_default`` is false) but ``is_allocated``; ``defaults_within`` and ``strip_defaults`` report and strip them.
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.drift.evidence.derivations import ADMISSION_RULES, DERIVED, Check, Context, Derived, derived_rule
from writeback.kube.kinds import data
from writeback.kube.paths import match, parse_pattern
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, PatternSegment, Segment, Wildcard

__all__ = [
    "ADMISSION_RULES",
    "DERIVED",
    "Context",
    "Derived",
    "Filled",
    "FilledField",
    "Stripped",
    "defaults_within",
    "derived_rule",
    "is_allocated",
    "is_default",
    "is_default_in",
    "is_default_item",
    "strip_defaults",
]


class Filled(enum.StrEnum):
    DEFAULT = "default"
    ALLOCATED = "allocated"


@dataclass(frozen=True, slots=True, kw_only=True)
class FilledField:
    """A field (or a whole list item) inside a value that the API server filled in."""

    path: FieldPath  # list items by position
    value: Any
    how: Filled
    rule: str  # for a person: "default 10", or the derived rule's doc


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    pattern: tuple[PatternSegment, ...]
    check: Check
    how: Filled
    rule: str
    contextual: bool = True  # the check reads the context (a derived rule); a constant's check does not


def _is(expected: Any) -> Check:
    def check(value: Any, _ctx: Context) -> bool:
        return type(value) is type(expected) and bool(value == expected)

    return check


def _entry(kind: str, text: str, raw: Mapping[str, Any]) -> _Entry:
    pattern = parse_pattern(text)
    if "derived" in raw:
        rule = next((d for d in DERIVED if d.name == raw["derived"]), None)
        if rule is None:
            raise ValueError(f"defaults data: {kind} {text}: unknown derived rule {raw['derived']!r}")
        how = Filled.ALLOCATED if rule.allocated else Filled.DEFAULT
        return _Entry(pattern=pattern, check=rule.check, how=how, rule=rule.doc)
    value = raw["value"]
    return _Entry(pattern=pattern, check=_is(value), how=Filled.DEFAULT, rule=f"default {json.dumps(value)}",
                  contextual=False)  # fmt: skip


def _last_key(pattern: Sequence[PatternSegment]) -> str:
    last = pattern[-1]
    assert isinstance(last, Key), pattern
    return last.name


@functools.cache
def _fields() -> Mapping[tuple[str, str], tuple[_Entry, ...]]:
    """By (kind, last field name): a lookup touches a handful of entries, not the whole table."""
    out: dict[tuple[str, str], list[_Entry]] = {}
    for kind, body in data()["kinds"].items():
        for raw in body["fields"]:
            e = _entry(kind, raw["path"], raw)
            out.setdefault((kind, _last_key(e.pattern)), []).append(e)
    for kind, text, value in ADMISSION_RULES:
        e = _Entry(pattern=parse_pattern(text), check=_is(value), how=Filled.DEFAULT, rule="ServiceAccount admission",
                   contextual=False)  # fmt: skip
        out.setdefault((kind, _last_key(e.pattern)), []).append(e)
    return {k: tuple(v) for k, v in out.items()}


_ITEM = object()  # a list item (``[*]``) in a generalized path


def _general(pattern: Sequence[PatternSegment]) -> tuple[object, ...] | None:
    """A pattern of keys and ``[*]`` as a tuple of names with ``_ITEM`` for the items; None for any other pattern."""
    out: list[object] = []
    for seg in pattern:
        if type(seg) is Key:
            out.append(seg.name)
        elif type(seg) is Wildcard and seg.item and not seg.many:
            out.append(_ITEM)
        else:
            return None
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Index:
    """The entries of ``_fields`` by (kind, generalized path), for patterns of keys and ``[*]`` only (all of the
    generated data): such a pattern matches a path exactly when the path, its items generalized, equals it. Other
    patterns stay by (kind, last name), matched one by one; ``order`` keeps the table's order between the two."""

    exact: Mapping[tuple[str, tuple[object, ...]], tuple[_Entry, ...]]
    other: Mapping[tuple[str, str], tuple[_Entry, ...]]
    order: Mapping[int, int]  # id(entry) -> its position in _fields()


@functools.cache
def _index() -> _Index:
    exact: dict[tuple[str, tuple[object, ...]], list[_Entry]] = {}
    other: dict[tuple[str, str], list[_Entry]] = {}
    order: dict[int, int] = {}
    for (kind, last), entries in _fields().items():
        for e in entries:
            order[id(e)] = len(order)
            general = _general(e.pattern)
            if general is None:
                other.setdefault((kind, last), []).append(e)
            else:
                exact.setdefault((kind, general), []).append(e)
    return _Index(
        exact={k: tuple(v) for k, v in exact.items()},
        other={k: tuple(v) for k, v in other.items()},
        order=order,
    )


def _candidates(kind: str, path: Sequence[Segment]) -> Sequence[_Entry]:
    """The entries whose pattern matches ``path`` (a key last), in the table's order."""
    index = _index()
    last = path[-1]
    assert isinstance(last, Key)
    found = index.exact.get((kind, tuple([s.name if type(s) is Key else _ITEM for s in path])), ())
    others = index.other.get((kind, last.name))
    if not others:
        return found
    matched = [e for e in others if match(e.pattern, path, prefix=False)]
    return sorted((*found, *matched), key=lambda e: index.order[id(e)]) if matched else found


def is_default_in(*, kind: str, path: Sequence[Segment], value: Any, parent: Callable[[], Any]) -> bool:
    """``is_default`` with the parent (``parent()``) looked up only when a derived rule for the field reads it."""
    if not path or not isinstance(path[-1], Key):
        return False
    entries = _candidates(kind, path)
    if not entries:
        return False
    ctx = _NO_CONTEXT  # a constant's check does not read it: the parent is looked up for a derived rule only
    for e in entries:
        if e.contextual and ctx is _NO_CONTEXT:
            ctx = Context(key=path[-1].name, ancestors=(parent(),))
        if e.check(value, ctx):
            return e.how is Filled.DEFAULT
    return False


_NO_CONTEXT = Context(key="")


@functools.cache
def _items() -> Mapping[tuple[str, str], tuple[tuple[tuple[PatternSegment, ...], Any], ...]]:
    """Whole list items the server adds (DefaultTolerationSeconds, HPA policies): by (kind, the list's name)."""
    out: dict[tuple[str, str], list[tuple[tuple[PatternSegment, ...], Any]]] = {}
    for kind, body in data()["kinds"].items():
        for raw in body["items"]:
            pattern = parse_pattern(raw["path"])[:-1]  # the list itself
            out.setdefault((kind, _last_key(pattern)), []).append((pattern, raw["item"]))
    return {k: tuple(v) for k, v in out.items()}


def _lookup(kind: str, path: Sequence[Segment], value: Any, ctx: Context) -> _Entry | None:
    if not path or not isinstance(path[-1], Key):
        return None
    for e in _candidates(kind, path):
        if e.check(value, ctx):
            return e
    return None


def is_default(*, kind: str, path: Sequence[Segment], value: Any, parent: Any) -> bool:
    """Is ``value`` at ``path`` what the API server fills in when the field is left out (allocated: no)?"""
    e = _lookup(kind, path, value, Context(key=_key(path), ancestors=(parent,)))
    return e is not None and e.how is Filled.DEFAULT


def is_allocated(*, kind: str, path: Sequence[Segment]) -> bool:
    """Is the field at ``path`` one the API server allocates (a cluster IP, a node port)?"""
    if not path or not isinstance(path[-1], Key):
        return False
    rule = derived_rule(kind=kind, path=path)
    return rule is not None and rule.allocated


def is_default_item(*, kind: str, path: Sequence[Segment], item: Any) -> bool:
    """Is ``item`` (a whole list item at ``path``) one the API server adds (e.g. a default toleration)?"""
    if len(path) < 2 or not isinstance(path[-2], Key):
        return False
    lst = path[:-1]
    return any(
        match(pattern, lst, prefix=False) and _same(item, known)
        for pattern, known in _items().get((kind, _key(lst)), ())
    )


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and bool(a == b)


def _key(path: Sequence[Segment]) -> str:
    return path[-1].name if path and isinstance(path[-1], Key) else ""


def defaults_within(*, kind: str, path: Sequence[Segment], value: Any, parent: Any = ABSENT) -> tuple[FilledField, ...]:
    """The fields and list items inside ``value`` (at ``path``, e.g. a probe or a container a person added) that
    the API server filled in: defaults and allocated values. ``value`` itself when it is one as a whole."""
    out: list[FilledField] = []
    _walk(kind, tuple(path), value, (parent,), out)
    return tuple(out)


def _walk(kind: str, path: FieldPath, value: Any, ancestors: tuple[Any, ...], out: list[FilledField]) -> None:
    e = _lookup(kind, path, value, Context(key=_key(path), ancestors=ancestors))
    if e is not None:
        out.append(FilledField(path=path, value=value, how=e.how, rule=e.rule))
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            _walk(kind, (*path, Key(str(k))), v, (value, *ancestors), out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            at = (*path, Index(i))
            if is_default_item(kind=kind, path=at, item=item):
                out.append(FilledField(path=at, value=item, how=Filled.DEFAULT, rule="a list item the server adds"))
            else:
                _walk(kind, at, item, (value, *ancestors), out)


@dataclass(frozen=True, slots=True, kw_only=True)
class Stripped:
    """``value`` without what the server filled in (``ABSENT`` when that was all of it), and what was removed."""

    value: Any
    removed: tuple[FilledField, ...]


def strip_defaults(*, kind: str, path: Sequence[Segment], value: Any, parent: Any = ABSENT) -> Stripped:
    """``value`` (at ``path``) as the person wrote it: the defaults and allocated values inside it removed.

    A mapping or list left empty by the removal goes too; one that was empty to begin with (``emptyDir: {}``)
    stays, since a person wrote it.
    """
    removed = defaults_within(kind=kind, path=path, value=value, parent=parent)
    if not removed:
        return Stripped(value=value, removed=())
    gone = {f.path for f in removed}
    return Stripped(value=_without(tuple(path), value, gone), removed=removed)


def _without(path: FieldPath, value: Any, gone: set[FieldPath]) -> Any:
    if path in gone:
        return ABSENT
    if isinstance(value, Mapping) and value:
        kept = {
            k: v for k, v in ((k, _without((*path, Key(str(k))), v, gone)) for k, v in value.items()) if v is not ABSENT
        }
        return kept or ABSENT
    if isinstance(value, list) and value:
        items = [v for v in (_without((*path, Index(i)), v, gone) for i, v in enumerate(value)) if v is not ABSENT]
        return items or ABSENT
    return value
