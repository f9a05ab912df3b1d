"""A cluster whose requests are counted by verb, for the service's metrics (``writeback_api_requests_total``).

``CountingCluster`` wraps the direct ``KubeCluster`` (``watch.enabled: false``); the watch cache
(``adapters.watching.WatchingCluster``) is one too and serves only ``list_objects`` from its informers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from writeback.adapters.kube.cluster import DEFAULT_PAGE_SIZE, KubeCluster, Resource
from writeback.kube.refs import ObjectRef
from writeback.model import LiveObject
from writeback.settings import Selector

RequestHook = Callable[[str], None]  # called with the verb of each request: list, get, patch, create


class CountingCluster:
    """The ``Cluster`` protocol over ``cluster``, telling ``count`` the verb of every request it sends."""

    def __init__(self, *, cluster: KubeCluster, count: RequestHook | None = None) -> None:
        self._cluster = cluster
        self._on_request = count

    @property
    def list_calls(self) -> int:
        return self._cluster.list_calls

    def _count(self, verb: str) -> None:
        if self._on_request is not None:
            self._on_request(verb)

    def list_objects(self, *, selector: Selector, page_size: int = DEFAULT_PAGE_SIZE) -> list[LiveObject]:
        before = self._cluster.list_calls
        try:
            return self._cluster.list_objects(selector=selector, page_size=page_size)
        finally:
            for _ in range(self._cluster.list_calls - before):
                self._count("list")

    def resource_for(self, *, api_version: str, kind: str) -> Resource:
        return self._cluster.resource_for(api_version=api_version, kind=kind)

    def dry_run_apply(self, *, body: Mapping[str, Any]) -> dict[str, Any]:
        self._count("patch")
        return self._cluster.dry_run_apply(body=body)

    def dry_run_create(self, *, body: Mapping[str, Any], twin_of: ObjectRef) -> dict[str, Any]:
        self._count("create")
        return self._cluster.dry_run_create(body=body, twin_of=twin_of)

    def get_object(self, *, ref: ObjectRef) -> dict[str, Any] | None:
        self._count("get")
        return self._cluster.get_object(ref=ref)

    def server_version(self) -> str:
        if not self._cluster.version_known:
            self._count("get")
        return self._cluster.server_version()
