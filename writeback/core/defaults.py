"""The fields the API server fills in, for offline mode and as a first check. Pure.

The constants are generated from the real API server (``writeback.kinds.data()``: every field that a dry-run
create of a skeleton object came back with, by kind and path, ``[*]`` for list items). A field whose value is a
relation, not a constant, names one of the few ``DERIVED`` rules below; the generator runs each rule's check on
every value the server returned, and refuses a varying value that no rule covers. A value other than the
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

from writeback.kinds import data
from writeback.model import ABSENT, FieldPath, Index, Key, PatternSegment, Segment
from writeback.paths import match, parse_pattern

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
    "is_default_item",
    "strip_defaults",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """Where a value sits: its key and its ancestors, nearest first (``ancestors[0]`` is the parent)."""

    key: str
    ancestors: tuple[Any, ...] = ()

    def up(self, n: int) -> Any:
        return self.ancestors[n] if len(self.ancestors) > n else ABSENT


Check = Callable[[Any, Context], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class Derived:
    """A field whose value the server derives from other fields (or allocates): a rule, not a constant."""

    name: str
    doc: str
    where: tuple[tuple[frozenset[str] | None, str], ...]  # (kinds or None for any, path pattern)
    check: Check
    allocated: bool = False


def _get(node: Any, key: str) -> Any:
    return node.get(key, ABSENT) if isinstance(node, Mapping) else ABSENT


def _pull_policy(value: Any, ctx: Context) -> bool:
    """``Always`` for ``:latest`` or no tag, else ``IfNotPresent`` (a digest counts as a tag)."""
    parent = ctx.up(0)
    image = _get(parent, "image")
    image = _get(parent, "reference") if image is ABSENT else image
    if not isinstance(image, str):
        return False
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return bool(value == "IfNotPresent")
    tag = name.split(":", 1)[1] if ":" in name else "latest"
    return bool(value == ("Always" if tag == "latest" else "IfNotPresent"))


def _same_as(sibling: str) -> Check:
    def check(value: Any, ctx: Context) -> bool:
        other = _get(ctx.up(0), sibling)
        return other is not ABSENT and type(other) is type(value) and bool(other == value)

    return check


def _single_family(value: Any, _ctx: Context) -> bool:
    return value in (["IPv4"], ["IPv6"])


def _policy_types(value: Any, ctx: Context) -> bool:
    egress = _get(ctx.up(0), "egress")
    return bool(value == ["Ingress", *(["Egress"] if isinstance(egress, list) and egress else [])])


def _crd_name(make: Callable[[str], str]) -> Check:
    def check(value: Any, ctx: Context) -> bool:
        kind = _get(ctx.up(0), "kind")
        return isinstance(kind, str) and value == make(kind)

    return check


def _limit_default(value: Any, ctx: Context) -> bool:
    """A LimitRange item's ``default`` is its ``max``; its ``defaultRequest`` is its ``default`` (else ``max``)."""
    item = ctx.up(1)
    for source in ("max",) if _get(item, "default") is ctx.up(0) else ("default", "max"):
        known = _get(_get(item, source), ctx.key)
        if known is not ABSENT:
            return bool(known == value)
    return False


def _request_from_limit(value: Any, ctx: Context) -> bool:
    limit = _get(_get(ctx.up(1), "limits"), ctx.key)
    return limit is not ABSENT and bool(limit == value)


def _named(value: Any, _ctx: Context) -> bool:
    return isinstance(value, str) and bool(value)


def _anything(_value: Any, _ctx: Context) -> bool:
    return True


_SERVICE = frozenset({"Service"})
DERIVED: tuple[Derived, ...] = (
    Derived(
        name="image-pull-policy",
        doc="imagePullPolicy from the image's tag: Always for :latest or none, else IfNotPresent",
        where=((None, "**.imagePullPolicy"), (None, "**.volumes[*].image.pullPolicy")),
        check=_pull_policy,
    ),
    Derived(
        name="same-as-port",
        doc="a Service port's targetPort is its port",
        where=((_SERVICE, "spec.ports[*].targetPort"),),
        check=_same_as("port"),
    ),
    Derived(
        name="service-account",
        doc="the deprecated serviceAccount repeats serviceAccountName",
        where=((None, "**.serviceAccount"),),
        check=_same_as("serviceAccountName"),
    ),
    Derived(
        name="single-ip-family",
        doc="ipFamilies: the cluster's one family ([IPv4] or [IPv6])",
        where=((_SERVICE, "spec.ipFamilies"),),
        check=_single_family,
    ),
    Derived(
        name="network-policy-types",
        doc="policyTypes: Ingress, plus Egress when egress rules are given",
        where=((frozenset({"NetworkPolicy"}), "spec.policyTypes"),),
        check=_policy_types,
    ),
    Derived(
        name="crd-singular",
        doc="names.singular: the kind in lower case",
        where=((frozenset({"CustomResourceDefinition"}), "spec.names.singular"),),
        check=_crd_name(str.lower),
    ),
    Derived(
        name="crd-list-kind",
        doc="names.listKind: the kind + List",
        where=((frozenset({"CustomResourceDefinition"}), "spec.names.listKind"),),
        check=_crd_name(lambda kind: kind + "List"),
    ),
    Derived(
        name="limit-range-default",
        doc="a LimitRange item's default is its max; its defaultRequest its default",
        where=(
            (frozenset({"LimitRange"}), "spec.limits[*].default.*"),
            (frozenset({"LimitRange"}), "spec.limits[*].defaultRequest.*"),
        ),
        check=_limit_default,
    ),
    Derived(
        name="request-from-limit",
        doc="a Pod container's missing resource request is its limit",
        where=tuple(
            (frozenset({"Pod"}), f"spec.{c}[*].resources.requests.*") for c in ("containers", "initContainers")
        ),
        check=_request_from_limit,
    ),
    Derived(
        name="cluster-default-class",
        doc="the cluster's default StorageClass or IngressClass, filled in by admission",
        where=(
            (frozenset({"PersistentVolumeClaim"}), "spec.storageClassName"),
            (frozenset({"Ingress"}), "spec.ingressClassName"),
        ),
        check=_named,
    ),
    Derived(
        name="allocated",
        doc="allocated by the API server",
        where=(
            (_SERVICE, "spec.clusterIP"),
            (_SERVICE, "spec.clusterIPs"),
            (_SERVICE, "spec.ports[*].nodePort"),
            (_SERVICE, "spec.healthCheckNodePort"),
            (frozenset({"Job"}), 'spec.selector.matchLabels["batch.kubernetes.io/controller-uid"]'),
        ),
        check=_anything,
        allocated=True,
    ),
)

# Written by hand: what the ServiceAccount admission plugin adds. The generating control plane runs without it
# (tests/controlplane/cp.py), so the data cannot show it. (kind, path, value)
ADMISSION_RULES: tuple[tuple[str, str, Any], ...] = (("Pod", "spec.serviceAccountName", "default"),)


@functools.cache
def _derived_patterns() -> tuple[tuple[Derived, frozenset[str] | None, tuple[PatternSegment, ...]], ...]:
    return tuple((d, kinds, parse_pattern(p)) for d in DERIVED for kinds, p in d.where)


def derived_rule(*, kind: str, path: Sequence[Segment]) -> Derived | None:
    """The derived rule that covers the field at ``path`` of a ``kind`` object, if any (the generator asks)."""
    for rule, kinds, pattern in _derived_patterns():
        if (kinds is None or kind in kinds) and match(pattern, path, prefix=False):
            return rule
    return None


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
    return _Entry(pattern=pattern, check=_is(value), how=Filled.DEFAULT, rule=f"default {json.dumps(value)}")


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
        e = _Entry(pattern=parse_pattern(text), check=_is(value), how=Filled.DEFAULT, rule="ServiceAccount admission")
        out.setdefault((kind, _last_key(e.pattern)), []).append(e)
    return {k: tuple(v) for k, v in out.items()}


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
    for e in _fields().get((kind, path[-1].name), ()):
        if match(e.pattern, path, prefix=False) and e.check(value, ctx):
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
