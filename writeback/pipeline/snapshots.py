"""The live side: the snapshot itself, one paginated list per scope (which scopes: ``writeback.drift.scoping``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from functools import partial

from writeback.adapters.files import Problem
from writeback.adapters.kube.cluster import DEFAULT_PAGE_SIZE, Cluster, Keep, KeepingCluster
from writeback.drift.scoping import Scope, filter_desired, filter_dump, scopes_for
from writeback.errors import ClusterError, ClusterUnreachable
from writeback.kube.refs import group_of
from writeback.model import DesiredObject, LiveObject

# scopes_for and the filters live in writeback.drift.scoping; importable from here for pipeline/detecting.py
__all__ = ["Scope", "Snapshot", "filter_desired", "filter_dump", "in_all_namespaces", "scopes_for", "snapshot"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    objects: tuple[LiveObject, ...]
    problems: tuple[Problem, ...] = ()


def in_all_namespaces(scopes: Sequence[Scope]) -> list[Scope]:
    """``-A``: the same kinds listed in every namespace (offline: every namespace of the dump), not only those Git
    uses and ``-n`` names."""
    return [replace(s, selector=s.selector.model_copy(update={"namespaces": ()})) for s in scopes]


def snapshot(
    *,
    cluster: Cluster,
    scopes: Sequence[Scope],
    desired: Sequence[DesiredObject],
    page_size: int = DEFAULT_PAGE_SIZE,
    keep: Keep | None = None,
) -> Snapshot:
    """One paginated list per kind and namespace; a kind the cluster does not serve is a problem, not a crash.

    ``keep``: what to keep of each listed object (``pipeline.settled``), called as its list page arrives when the
    cluster can (``KeepingCluster``), else once its list is done; the snapshot holds what it returns."""
    objects: list[LiveObject] = []
    problems: list[Problem] = []
    for scope in scopes:
        names = scope.names
        try:
            if keep is None:
                listed = cluster.list_objects(selector=scope.selector, page_size=page_size)
            else:
                each = keep if names is None else partial(_named, names=names, keep=keep)
                if isinstance(cluster, KeepingCluster):
                    listed = cluster.list_kept(selector=scope.selector, page_size=page_size, keep=each)
                else:
                    whole = cluster.list_objects(selector=scope.selector, page_size=page_size)
                    listed = [k for o in whole if (k := each(o)) is not None]
        except ClusterUnreachable:
            raise  # the whole cluster is down: one error, not one problem per resource
        except ClusterError as e:
            sel = scope.selector
            group = group_of(sel.api_version)
            affected = [d for d in desired if (d.ref.group, d.ref.kind) == (group, sel.kind)]
            if not affected:
                raise
            problems.extend(Problem(file=d.file, resource=d.ref, message=str(e)) for d in affected)
            continue
        objects.extend(listed if names is None else (o for o in listed if o.ref.name in names))
    return Snapshot(objects=tuple(objects), problems=tuple(problems))


def _named(obj: LiveObject, *, names: Collection[str], keep: Keep) -> LiveObject | None:
    """A scope that names its objects: the others are not kept at all."""
    return keep(obj) if obj.ref.name in names else None
