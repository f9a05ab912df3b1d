"""The API server's version and discovery, as Argo CD's controller and Helm read them for ``.Capabilities``.

``read_discovery`` asks ``/version`` and the aggregated discovery documents (``/api`` and ``/apis`` as
``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``: three requests in all), and falls back to the legacy documents
(``/api``, ``/apis`` and one per group/version) on a server that does not serve the aggregated form. Every served
version is read, not only the preferred ones (Argo CD's cluster cache and Helm's ``GetVersionSet`` both read all).

``DiscoveryOnce`` is the reader one cycle hands its sources (``Tools.discovery``): read on first use, at most once,
so that the load, the tracing and the proof of one cycle render with the same capabilities; the next cycle's reader
reads again (a CRD installed since is seen).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from writeback.adapters.kube.cluster import KubeCluster
from writeback.errors import ClusterError
from writeback.kube.discovery import Discovery, ServedResource

__all__ = ["AGGREGATED", "DiscoveryOnce", "read_discovery"]

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
_LIST_KIND = "APIGroupDiscoveryList"


Get = Callable[..., dict[str, Any]]  # (path, accept=...) -> the document


def _getter(cluster: KubeCluster, count: Callable[[str], None] | None) -> Get:
    def get(path: str, accept: str = "application/json") -> dict[str, Any]:
        if count is not None:
            count("get")
        doc = cluster.request(method="GET", path=path, what=f"discovery ({path})", accept=accept)
        if doc is None:  # not asked with allow_404: never None
            raise ClusterError(f"discovery ({path}): no answer")
        return doc

    return get


def _version(get: Get) -> str:
    doc = get("/version")
    version = doc.get("gitVersion")
    if not isinstance(version, str) or not version:
        raise ClusterError("GET /version: the API server's answer has no gitVersion")
    return version


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _verbs(entry: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(str(v) for v in entry.get("verbs") or () if isinstance(v, str))


def _aggregated(doc: Mapping[str, Any]) -> Iterator[tuple[str, bool, list[ServedResource]]]:
    """(group/version, preferred, resources) of an ``APIGroupDiscoveryList``; versions come in preference order. A
    stale version (its aggregated API server does not answer) is left out, as client-go leaves it out."""
    for item in doc.get("items") or ():
        if not isinstance(item, Mapping):
            continue
        group = str((item.get("metadata") or {}).get("name") or "")
        first = True
        for v in item.get("versions") or ():
            if not isinstance(v, Mapping) or not v.get("version") or v.get("freshness") == "Stale":
                continue
            gv = _group_version(group, str(v["version"]))
            served: list[ServedResource] = []
            for r in v.get("resources") or ():
                kind = (r.get("responseKind") or {}).get("kind") if isinstance(r, Mapping) else None
                if not kind or not r.get("resource"):
                    continue  # client-go skips a resource without its kind
                served.append(ServedResource(group_version=gv, name=str(r["resource"]), kind=str(kind),
                                             verbs=_verbs(r)))  # fmt: skip
                for sub in r.get("subresources") or ():
                    sub_kind = (sub.get("responseKind") or {}).get("kind") if isinstance(sub, Mapping) else None
                    if sub_kind and sub.get("subresource"):
                        served.append(ServedResource(group_version=gv, name=f"{r['resource']}/{sub['subresource']}",
                                                     kind=str(sub_kind), verbs=_verbs(sub)))  # fmt: skip
            yield gv, first, served
            first = False


def _resources(get: Get, gv: str) -> list[ServedResource]:
    doc = get(f"/api/{gv}" if "/" not in gv else f"/apis/{gv}")
    return [
        ServedResource(group_version=gv, name=str(r["name"]), kind=str(r["kind"]), verbs=_verbs(r))
        for r in doc.get("resources") or ()
        if isinstance(r, Mapping) and r.get("name") and r.get("kind")
    ]


def _legacy(get: Get, core: Mapping[str, Any], groups: Mapping[str, Any]) -> Iterator[
    tuple[str, bool, list[ServedResource]]
]:  # fmt: skip
    """The same from the legacy documents: ``/api`` (``APIVersions``), ``/apis`` (``APIGroupList``), and one
    ``APIResourceList`` per group/version."""
    for i, version in enumerate(core.get("versions") or ()):
        yield str(version), i == 0, _resources(get, str(version))
    for group in groups.get("groups") or ():
        if not isinstance(group, Mapping):
            continue
        preferred = str((group.get("preferredVersion") or {}).get("groupVersion") or "")
        for v in group.get("versions") or ():
            gv = str(v.get("groupVersion") or "") if isinstance(v, Mapping) else ""
            if gv:
                yield gv, gv == preferred, _resources(get, gv)


def read_discovery(
    cluster: KubeCluster, *, aggregated: bool = True, count: Callable[[str], None] | None = None
) -> Discovery:
    """The server's version and everything it serves (``aggregated=False``: from the legacy documents only);
    ``count`` is told ``"get"`` for every request sent (the service's request metrics)."""
    get = _getter(cluster, count)
    git_version = _version(get)
    accept = AGGREGATED if aggregated else "application/json"
    core, groups = get("/api", accept=accept), get("/apis", accept=accept)
    if core.get("kind") == _LIST_KIND and groups.get("kind") == _LIST_KIND:
        found = [*_aggregated(core), *_aggregated(groups)]
    else:
        found = list(_legacy(get, core, groups))
    return Discovery(
        git_version=git_version,
        group_versions=tuple(gv for gv, _, _ in found),
        preferred=tuple(gv for gv, preferred, _ in found if preferred),
        resources=tuple(r for _, _, served in found for r in served),
    )


class DiscoveryOnce:
    """``read_discovery`` of ``cluster`` on the first call, the same answer after (a failure is not kept: the next
    call asks again)."""

    def __init__(self, cluster: KubeCluster, *, count: Callable[[str], None] | None = None) -> None:
        self._cluster = cluster
        self._count = count
        self._lock = threading.Lock()
        self._found: Discovery | None = None

    def __call__(self) -> Discovery:
        with self._lock:
            if self._found is None:
                self._found = read_discovery(self._cluster, count=self._count)
            return self._found
