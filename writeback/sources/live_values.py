"""Check that rendered objects (``kustomize build`` of a patched repo) hold the live values of the drifts. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from writeback.kube.paths import format_path, lookup
from writeback.kube.pathtypes import ABSENT, FieldPath
from writeback.kube.refs import ObjectRef, group_of
from writeback.model import Drift, Op

__all__ = ["Mismatch", "find_rendered", "mismatches"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Mismatch:
    """A drift whose live value the rendered objects do not hold (``path`` None: its object is not rendered)."""

    resource: ObjectRef
    path: FieldPath | None
    rendered: Any = ABSENT
    live: Any = ABSENT

    @property
    def field(self) -> str:
        """The resource and field, without values (safe for a PR body)."""
        return f"{self.resource}: {format_path(self.path)}" if self.path is not None else str(self.resource)

    def __str__(self) -> str:
        if self.path is None:
            return f"{self.resource}: not in the rendered output"
        return f"{self.field} renders as {_show(self.rendered)}, live is {_show(self.live)}"


def find_rendered(objects: Iterable[Mapping[str, Any]], ref: ObjectRef) -> Mapping[str, Any] | None:
    """The rendered object for ``ref``; a generated ConfigMap/Secret may carry another hash suffix."""
    group, kind, namespace, name = ref.identity
    hashed: Mapping[str, Any] | None = None
    for obj in objects:
        api = str(obj.get("apiVersion") or "")
        meta = obj.get("metadata") or {}
        if obj.get("kind") != kind or group_of(api) != group:
            continue
        if namespace and (meta.get("namespace") or namespace) != namespace:
            continue
        other = str(meta.get("name") or "")
        if other == name:
            return obj
        base = re.sub(r"-[a-z0-9]{6,12}$", "", name)
        if (
            kind in ("ConfigMap", "Secret")
            and base != name
            and re.fullmatch(re.escape(base) + r"-[a-z0-9]{6,12}", other)
        ):
            hashed = obj
    return hashed


def mismatches(objects: Sequence[Mapping[str, Any]], drifts: Iterable[Drift]) -> list[Mismatch]:
    """One per drift whose live value the rendered objects do not hold."""
    out: list[Mismatch] = []
    for d in drifts:
        obj = find_rendered(objects, d.resource)
        if obj is None:
            out.append(Mismatch(resource=d.resource, path=None))
            continue
        got = lookup(obj, d.path)
        want = ABSENT if d.op is Op.REMOVE else d.live
        if not _same(got, want):
            out.append(Mismatch(resource=d.resource, path=d.path, rendered=got, live=want))
    return out


def _same(got: Any, want: Any) -> bool:
    if got is ABSENT or want is ABSENT:
        return got is want
    if isinstance(want, Mapping) and isinstance(got, Mapping):
        return all(k in got and _same(got[k], v) for k, v in want.items())
    return bool(got == want)


def _show(value: Any) -> str:
    return "absent" if value is ABSENT else repr(value)
