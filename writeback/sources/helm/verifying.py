"""The proof of a change set: the render of the edited values equals the render of the Git values everywhere,
except exactly at the drifted fields, which equal live. Pure.

Lists of maps that all have a ``name`` are compared by name (their order is not a change); other lists by position.
Values of Secrets never appear in a reason.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from writeback.kube.paths import format_path
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Key, Select
from writeback.kube.refs import Identity
from writeback.model import Drift, Op
from writeback.sources.helm.rendered import RenderedObject, Rendering
from writeback.yaml.edit.readback import remove_path, set_path

__all__ = ["Difference", "Proof", "Verification", "differences", "generated", "verify"]

MAX_SHOWN = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    identity: Identity
    slot: tuple[str, str, int]  # template, kind, position: the same object in another render of the chart
    path: FieldPath
    expected: Any  # what the Git render with the drifts applied has (ABSENT: nothing)
    rendered: Any  # what the re-render has
    secret: bool = False

    def __str__(self) -> str:
        g, k, ns, n = self.identity
        obj = f"{k}{'.' + g if g else ''}/{ns + '/' if ns else ''}{n}"
        if self.secret:
            return f"{obj} {format_path(self.path)}: changed (a Secret: values not shown)"
        return f"{obj} {format_path(self.path)}: expected {_show(self.expected)}, re-render has {_show(self.rendered)}"


def _show(value: Any) -> str:
    if value is ABSENT:
        return "nothing"
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


@dataclass(frozen=True, slots=True, kw_only=True)
class Proof:
    """What the PR body says: the re-render changes exactly ``fields`` fields of ``objects`` objects."""

    fields: int
    objects: int
    ignored: int = 0  # fields that differ between two renders of the same values (generated), left out

    def sentence(self) -> str:
        s = "" if self.fields == 1 else "s"
        o = "" if self.objects == 1 else "s"
        text = (
            f"helm template re-render: changes exactly these {self.fields} field{s} of these {self.objects} "
            f"object{o}; nothing else"
        )
        if self.ignored:
            g = "" if self.ignored == 1 else "s"
            text += f" (besides {self.ignored} generated field{g} that differ on every render)"
        return text


@dataclass(frozen=True, slots=True, kw_only=True)
class Verification:
    proof: Proof | None = None
    differences: tuple[Difference, ...] = ()
    failure: str = ""  # the re-render itself failed
    objects: tuple[Mapping[str, Any], ...] = ()  # the re-render's lasting objects (set by ``HelmEngine.verify``)

    @property
    def ok(self) -> bool:
        return self.proof is not None

    def reason(self) -> str:
        if self.failure:
            return self.failure
        shown = "; ".join(str(d) for d in self.differences[:MAX_SHOWN])
        more = f" (and {len(self.differences) - MAX_SHOWN} more)" if len(self.differences) > MAX_SHOWN else ""
        return f"helm template re-render with the edited values does not match live exactly: {shown}{more}"


def _named(items: Sequence[Any]) -> bool:
    names = [i.get("name") for i in items if isinstance(i, Mapping)]
    return len(names) == len(items) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def _diff(a: Any, b: Any, at: FieldPath, out: list[tuple[FieldPath, Any, Any]]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in dict.fromkeys([*a.keys(), *b.keys()]):
            _diff(a.get(k, ABSENT), b.get(k, ABSENT), (*at, Key(str(k))), out)
        return
    if isinstance(a, list) and isinstance(b, list):
        if _named(a) and _named(b):
            by_a = {i["name"]: i for i in a}
            by_b = {i["name"]: i for i in b}
            for n in dict.fromkeys([*by_a, *by_b]):
                _diff(by_a.get(n, ABSENT), by_b.get(n, ABSENT), (*at, Select((("name", n),))), out)
            return
        if len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                _diff(x, y, (*at, Index(i)), out)
            return
    if not _same(a, b):
        out.append((at, a, b))


def _empty(v: Any) -> bool:
    return v is ABSENT or v is None or (isinstance(v, Mapping | list) and not v)


def _same(a: Any, b: Any) -> bool:
    if _empty(a) and _empty(b):
        return True  # absent, null, {} and [] are all "not set" (as the drift engine reads them)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b)
    return type(a) is type(b) and a == b


def _pairs(
    want: Sequence[RenderedObject], got: Sequence[RenderedObject]
) -> list[tuple[RenderedObject | None, RenderedObject | None]]:
    """Objects of two renders paired by identity, then (generated names) by template, kind and position."""
    by_id = {o.ref.identity: o for o in got}
    used: set[int] = set()
    pairs: list[tuple[RenderedObject | None, RenderedObject | None]] = []
    rest: list[RenderedObject] = []
    for o in want:
        other = by_id.get(o.ref.identity)
        if other is not None and id(other) not in used:
            used.add(id(other))
            pairs.append((o, other))
        else:
            rest.append(o)
    by_slot = {_slot(o): o for o in got if id(o) not in used}
    for o in rest:
        other = by_slot.pop(_slot(o), None)
        if other is not None:
            used.add(id(other))
        pairs.append((o, other))
    pairs.extend((None, o) for o in got if id(o) not in used)
    return pairs


def _slot(o: RenderedObject) -> tuple[str, str, int]:
    return (o.template, o.ref.kind, o.ordinal)


def differences(expected: Sequence[RenderedObject], rendered: Sequence[RenderedObject]) -> list[Difference]:
    """Every field where ``rendered`` differs from ``expected`` (objects missing or added included)."""
    out: list[Difference] = []
    for a, b in _pairs(expected, rendered):
        one = a or b
        assert one is not None
        raw: list[tuple[FieldPath, Any, Any]] = []
        _diff(a.body if a else ABSENT, b.body if b else ABSENT, (), raw)
        ident = one.ref.identity
        secret = ident.kind == "Secret" and ident.group == ""
        out.extend(
            Difference(identity=ident, slot=_slot(one), path=p, expected=e, rendered=r, secret=secret)
            for p, e, r in raw
        )
    return out


def expected_after(base: Rendering, drifts: Sequence[Drift]) -> list[RenderedObject]:
    """The Git render with every drifted field set to live (removed for a removal)."""
    bodies: dict[Identity, Any] = {o.ref.identity: copy.deepcopy(dict(o.body)) for o in base.objects}
    for d in drifts:
        ident = d.resource.identity
        if ident not in bodies:
            continue
        if d.op is Op.REMOVE or d.live is ABSENT:
            remove_path(bodies[ident], d.path)
        else:
            bodies[ident] = set_path(bodies[ident], d.path, copy.deepcopy(d.live), source=str(d.resource))
    return [replace(o, body=bodies[o.ref.identity]) for o in base.lasting]


_TOKEN = re.compile(r"wbq\d+x|731\d{3}")


def generated(base: Rendering, other: Rendering, found: Sequence[Difference]) -> list[Difference]:
    """Of the differences ``found`` between a re-render and ``base``, those the chart generates anew on every
    render (random names, certificates): text that differs in all three of ``base``, ``other`` (another render of
    the chart, perturbed or not; no perturbation token in it) and the re-render. A value that only a changed
    value moves is the same in two of them."""
    elsewhere = {(d.slot, d.path): d.rendered for d in differences(base.lasting, other.lasting)}
    out = []
    for d in found:
        third = elsewhere.get((d.slot, d.path), ABSENT)
        values = (d.expected, d.rendered, third)
        if all(isinstance(v, str) for v in values) and len(set(values)) == 3 and not _TOKEN.search(str(third)):
            out.append(d)
    return out


def verify(
    base: Rendering, after: Rendering, drifts: Sequence[Drift], *, volatile: Sequence[Difference] = ()
) -> Verification:
    """Does ``after`` (the render of the edited values) equal ``base`` (the Git values' render) but for exactly
    ``drifts``, which it must have at their live values? ``volatile``: differences between two renders of the same
    values (generated content), ignored."""
    skip = {(d.slot, d.path) for d in volatile}
    found = [d for d in differences(expected_after(base, drifts), after.lasting) if (d.slot, d.path) not in skip]
    if found:
        return Verification(differences=tuple(found))
    objects = {d.resource.identity for d in drifts}
    fields = {(d.resource.identity, d.path) for d in drifts}
    return Verification(proof=Proof(fields=len(fields), objects=len(objects), ignored=len(skip)))
