"""Which objects a drift run looks at: the lists to snapshot (scopes) and the offline filters over them. Pure.

Configured selectors are the scopes; without them, the kinds Git declares in the namespaces it uses (cluster-scoped
kinds: only the names Git declares). Secrets are left out unless ``policy.include_secrets``. The same scopes filter a
dump offline and, with selectors, the Git side; there a label selector's terms about labels that the GitOps tool or
the server adds on apply (``kustomize.toolkit.fluxcd.io/name``, ...) hold for every Git object that does not declare
that label itself. The snapshot itself is ``writeback.pipeline.snapshots``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from writeback.drift.normalizing import added_label
from writeback.kube.refs import group_of, is_secret
from writeback.kube.selectors import parse_selector
from writeback.model import DesiredObject, LiveObject
from writeback.settings import Selector

__all__ = ["Scope", "filter_desired", "filter_dump", "scopes_for"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """One list: a kind in some namespaces (or cluster-wide), optionally only some names."""

    selector: Selector
    names: frozenset[str] | None = None  # cluster-scoped kinds without selectors: only what Git declares


def scopes_for(
    *,
    desired: Sequence[DesiredObject],
    selectors: Sequence[Selector] = (),
    namespaces: Sequence[str] = (),
    include_secrets: bool = False,
) -> list[Scope]:
    """The configured selectors, else the kinds Git declares in the namespaces it uses (plus ``--namespace``)."""
    if selectors:
        return [Scope(selector=s) for s in selectors if include_secrets or not is_secret(s.api_version, s.kind)]
    kinds: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
    for d in desired:
        if not include_secrets and d.ref.is_secret:
            continue
        nss, names = kinds.setdefault((d.ref.api_version, d.ref.kind), (set(), set()))
        if d.ref.namespace:
            nss.add(d.ref.namespace)
        else:
            names.add(d.ref.name)
    out: list[Scope] = []
    for (api_version, kind), (nss, names) in sorted(kinds.items()):
        if nss:
            sel = Selector.model_validate(
                {"apiVersion": api_version, "kind": kind, "namespaces": sorted(nss | set(namespaces))}
            )
            out.append(Scope(selector=sel))
        if names:
            sel = Selector.model_validate({"apiVersion": api_version, "kind": kind})
            out.append(Scope(selector=sel, names=frozenset(names)))
    return out


def _in_scope(obj: LiveObject | DesiredObject, scope: Scope) -> bool:
    sel = scope.selector
    group = group_of(sel.api_version)
    if (obj.ref.group, obj.ref.kind) != (group, sel.kind):
        return False
    if sel.namespaces and obj.ref.namespace and obj.ref.namespace not in sel.namespaces:
        return False
    if scope.names is not None and obj.ref.name not in scope.names:
        return False
    if obj.ref.name in sel.exclude or obj.ref.ns_name in sel.exclude:
        return False
    if sel.label_selector:
        labels = (obj.body.get("metadata") or {}).get("labels") or {}
        selector = parse_selector(sel.label_selector)
        if isinstance(obj, DesiredObject):  # Git never carries what the tool or the server adds on apply
            selector = selector.keeping(lambda key: key in labels or added_label(key) is None)
        return selector.matches(labels)
    return True


def filter_dump(*, objects: Sequence[LiveObject], scopes: Sequence[Scope]) -> tuple[LiveObject, ...]:
    """Offline: the dumped objects that the same scopes would have listed."""
    return tuple(o for o in objects if any(_in_scope(o, s) for s in scopes))


def filter_desired(*, objects: Sequence[DesiredObject], scopes: Sequence[Scope]) -> tuple[DesiredObject, ...]:
    """With configured selectors: only the Git resources they select (the others were not snapshotted)."""
    return tuple(o for o in objects if any(_in_scope(o, s) for s in scopes))
