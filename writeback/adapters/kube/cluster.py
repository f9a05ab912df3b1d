"""The Kubernetes API edge: discovery, paginated lists, server-side-apply dry-runs and single GETs.

Responses are parsed with ``json`` from the raw bytes (no model classes): a list of thousands of objects
costs one JSON parse per page. Every kubernetes or transport error is re-raised as ``ClusterError`` naming
the resource.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import quote

from writeback.adapters.kube.api_errors import body_message, for_status, transport_reason
from writeback.errors import ClusterError, ClusterUnreachable, KindNotServed
from writeback.kube.refs import ObjectRef
from writeback.kube.wellknown import DRY_RUN_MANAGER
from writeback.model import LiveObject, Source
from writeback.settings import Selector

log = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 500
_TIMEOUT = (10.0, 120.0)
_THROTTLED = (429, 503)  # the API server's "slow down" (priority and fairness) and "not now": retried
_RETRIES = 4  # attempts after the first, for a throttled read or dry-run
_MAX_WAIT = 10.0  # seconds: a longer Retry-After is capped (the next cycle retries anyway)
_LIST_RESTARTS = 3  # a list whose continue token expired (410) starts again from the first page


class ContinueExpired(ClusterError):
    """410 Gone on a page of a list: the continue token (its snapshot) is older than etcd's compaction."""


def _retry_after(headers: Any) -> float:
    try:
        return max(0.0, min(_MAX_WAIT, float(headers.get("Retry-After") or 1)))
    except (TypeError, ValueError):
        return 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Resource:
    """A kind as the API serves it."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def collection_path(self, *, namespace: str | None) -> str:
        base = f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            return f"{base}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{base}/{self.plural}"

    def object_path(self, *, namespace: str | None, name: str) -> str:
        return f"{self.collection_path(namespace=namespace)}/{quote(name, safe='')}"


class Cluster(Protocol):
    """What the pipeline needs from a cluster."""

    def resource_for(self, *, api_version: str, kind: str) -> Resource: ...

    def list_objects(self, *, selector: Selector, page_size: int = DEFAULT_PAGE_SIZE) -> list[LiveObject]: ...

    def dry_run_apply(self, *, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def dry_run_create(self, *, body: Mapping[str, Any], twin_of: ObjectRef) -> dict[str, Any]: ...

    def get_object(self, *, ref: ObjectRef) -> dict[str, Any] | None: ...

    def server_version(self) -> str: ...


Keep = Callable[[LiveObject], LiveObject | None]  # what is kept of a listed object (None: nothing)


@runtime_checkable
class KeepingCluster(Protocol):
    """A cluster that hands each listed object to a ``keep`` function as its page arrives (``KubeCluster``)."""

    def list_kept(
        self, *, selector: Selector, page_size: int = DEFAULT_PAGE_SIZE, keep: Keep | None
    ) -> list[LiveObject]: ...


def _live(res: Resource, item: dict[str, Any], excluded: set[str]) -> LiveObject | None:
    meta = item.get("metadata") or {}
    name, item_ns = str(meta.get("name", "")), meta.get("namespace")
    if name in excluded or (item_ns and f"{item_ns}/{name}" in excluded):
        return None
    item.setdefault("apiVersion", res.api_version)
    item.setdefault("kind", res.kind)
    # one copy of a namespace's name for all of its objects (JSON decoding makes one per object): what a settled
    # object keeps of its body is little more than its names (``drift.settling.compacted``)
    namespace = (sys.intern(item_ns) if type(item_ns) is str else item_ns) if item_ns else None
    ref = ObjectRef(api_version=res.api_version, kind=res.kind, namespace=namespace, name=name)
    return LiveObject(ref=ref, body=item, source=Source.CLUSTER)


class KubeCluster:
    """The real cluster, through an official ``kubernetes.client.ApiClient``."""

    def __init__(self, *, api_client: Any) -> None:
        self._api = api_client
        self._groups: dict[str, list[dict[str, Any]]] = {}
        self._resources: dict[tuple[str, str], Resource] = {}
        self.list_calls = 0
        self.list_calls_by_kind: Counter[str] = Counter()
        self.dry_run_calls = 0
        self.dry_run_refs: list[ObjectRef] = []  # which objects were dry-run (tests, debugging)
        self._version: str | None = None

    @classmethod
    def connect(
        cls, *, kubeconfig: str | None = None, context: str | None = None, in_cluster: bool = False
    ) -> KubeCluster:
        from writeback.adapters.kube.kubeconfigs import ClusterAccess, new_api_client

        return cls(
            api_client=new_api_client(
                access=ClusterAccess(kubeconfig=kubeconfig, context=context, in_cluster=in_cluster)
            )
        )

    # ------------------------------------------------------------ raw HTTP

    def _request(
        self,
        *,
        method: str,
        path: str,
        what: str,
        query: list[tuple[str, str]] | None = None,
        body: str | list[Any] | dict[str, Any] | None = None,  # a list or dict: JSON (the client serializes it)
        content_type: str | None = None,
        allow_404: bool = False,
        accept: str = "application/json",
    ) -> dict[str, Any] | None:

        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        safe = method == "GET" or ("dryRun", "All") in (query or [])  # a real write is never sent twice here
        for attempt in range(_RETRIES + 1 if safe else 1):
            status, data, reason, wait = self._send(method=method, path=path, what=what, query=query, body=body,
                                                    headers=headers)  # fmt: skip
            if status not in _THROTTLED or attempt == _RETRIES or not safe:
                break
            log.info("%s: HTTP %d, retrying in %.1fs (%d of %d)", what, status, wait, attempt + 1, _RETRIES)
            time.sleep(wait)
        if status == 404 and allow_404:
            return None
        if status == 410 and query and any(k == "continue" for k, _ in query):
            raise ContinueExpired(f"{what}: {method} {path}: HTTP 410: {body_message(data) or 'expired'}")
        if not 200 <= status <= 299:
            msg = body_message(data) or reason
            again = f" (after {_RETRIES} retries)" if status in _THROTTLED and safe else ""
            raise for_status(status, f"{what}: {method} {path}: HTTP {status}{again}: {msg}")
        try:
            parsed = json.loads(data)
        except ValueError as e:
            raise ClusterError(f"{what}: {method} {path}: the API server returned invalid JSON: {e}") from e
        if not isinstance(parsed, dict):
            raise ClusterError(f"{what}: {method} {path}: expected a JSON object")
        return parsed

    def _send(
        self,
        *,
        method: str,
        path: str,
        what: str,
        query: list[tuple[str, str]] | None,
        body: str | list[Any] | Mapping[str, Any] | None,
        headers: dict[str, str],
    ) -> tuple[int, bytes, str, float]:
        """One request: (status, body, reason, the Retry-After wait); transport errors raised as ours."""
        from kubernetes.client.exceptions import ApiException, OpenApiException
        from urllib3.exceptions import HTTPError

        try:
            request = self._api.param_serialize(
                method=method,
                resource_path=path,
                query_params=query or [],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(*request, _request_timeout=_TIMEOUT)
            data = response.read()
        except ApiException as e:
            raise for_status(e.status, f"{what}: {method} {path}: {e.reason or e}") from e
        except (HTTPError, OSError) as e:
            host = getattr(getattr(self._api, "configuration", None), "host", "") or "?"
            raise ClusterUnreachable(f"{what}: cannot reach the API server {host} ({transport_reason(e)})") from e
        except OpenApiException as e:
            raise ClusterError(f"{what}: {method} {path}: {e}") from e
        return response.status, data, str(response.reason), _retry_after(response.headers)

    def request(
        self, *, method: str, path: str, what: str, body: list[Any] | Mapping[str, Any] | None = None,
        query: list[tuple[str, str]] | None = None, content_type: str | None = None, allow_404: bool = False,
        accept: str = "application/json",
    ) -> dict[str, Any] | None:  # fmt: skip
        """One raw API call for the other adapters (break-glass's patches, access reviews and Events); every
        error is a ``ClusterError`` subclass (403 ``ClusterForbidden``, 409/422 ``ClusterConflict``, no answer
        ``ClusterUnreachable``). A write through here must carry its ``# real write:`` mark at the call site."""
        payload = dict(body) if isinstance(body, Mapping) else body
        return self._request(
            method=method, path=path, what=what, query=query, body=payload, content_type=content_type,
            allow_404=allow_404, accept=accept,
        )  # fmt: skip

    # ------------------------------------------------------------ discovery

    def _group_resources(self, api_version: str) -> list[dict[str, Any]]:
        if api_version not in self._groups:
            path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            doc = self._request(method="GET", path=path, what=f"discovery of {api_version}", allow_404=True)
            if doc is None:
                raise KindNotServed(f"apiVersion {api_version}: not served by this cluster (is the CRD installed?)")
            self._groups[api_version] = [r for r in doc.get("resources", []) if isinstance(r, dict)]
        return self._groups[api_version]

    def resource_for(self, *, api_version: str, kind: str) -> Resource:
        """apiVersion + kind -> plural and scope, via API discovery (cached per group-version)."""
        key = (api_version, kind)
        if key not in self._resources:
            for r in self._group_resources(api_version):
                if r.get("kind") == kind and "/" not in str(r.get("name", "")):
                    self._resources[key] = Resource(
                        api_version=api_version, kind=kind, plural=str(r["name"]), namespaced=bool(r.get("namespaced"))
                    )
                    break
            else:
                raise KindNotServed(f"{kind} ({api_version}): kind not served by this cluster")
        return self._resources[key]

    def server_version(self) -> str:
        """The API server's version (``/version``: gitVersion, plus the platform), asked once per connection like
        discovery: dry-run answers kept across cycles are keyed by it."""
        if self._version is None:
            doc = self._request(method="GET", path="/version", what="the API server's version") or {}
            self._version = f"{doc.get('gitVersion', '')} {doc.get('platform', '')}".strip()
        return self._version

    @property
    def version_known(self) -> bool:
        return self._version is not None

    # ------------------------------------------------------------ reads

    def list_objects(self, *, selector: Selector, page_size: int = DEFAULT_PAGE_SIZE) -> list[LiveObject]:
        """Every object of one kind: one paginated list per namespace (or one across all namespaces)."""
        return self.list_kept(selector=selector, page_size=page_size, keep=None)

    def list_kept(
        self, *, selector: Selector, page_size: int = DEFAULT_PAGE_SIZE, keep: Keep | None
    ) -> list[LiveObject]:
        """:meth:`list_objects`, each object handed to ``keep`` as soon as its page is decoded: what ``keep`` returns
        is listed instead (None: left out), and the page is let go before the next is asked for. A list whose
        continue token expired starts again: what ``keep`` returned for its first pages is dropped then."""
        res = self.resource_for(api_version=selector.api_version, kind=selector.kind)
        scopes: tuple[str | None, ...] = (
            tuple(selector.namespaces) if res.namespaced and selector.namespaces else (None,)
        )
        excluded = set(selector.exclude)
        out: list[LiveObject] = []
        for ns in scopes:
            out.extend(self._paginate(res=res, namespace=ns, label_selector=selector.label_selector,
                                      page_size=page_size, keep=keep, excluded=excluded))  # fmt: skip
        return out

    def _paginate(
        self, *, res: Resource, namespace: str | None, label_selector: str | None, page_size: int,
        keep: Keep | None, excluded: set[str],
    ) -> list[LiveObject]:  # fmt: skip
        for attempt in range(_LIST_RESTARTS + 1):
            out: list[LiveObject] = []
            try:
                for items in self._pages(res=res, namespace=namespace, label_selector=label_selector,
                                         page_size=page_size):  # fmt: skip
                    for item in items:
                        obj = _live(res, item, excluded)
                        if obj is not None and keep is not None:
                            obj = keep(obj)
                        if obj is not None:
                            out.append(obj)
                    del items  # the page's objects live on only where kept
                return out
            except ContinueExpired as e:
                if attempt == _LIST_RESTARTS:
                    raise
                log.info("%s; listing again from the first page", e)
        raise AssertionError("unreachable")

    def _pages(
        self, *, res: Resource, namespace: str | None, label_selector: str | None, page_size: int
    ) -> Iterator[list[dict[str, Any]]]:
        """Each page's items, one page at a time (a page is let go before the next request)."""
        path = res.collection_path(namespace=namespace)
        where = f" in namespace {namespace}" if namespace else ""
        what = f"list {res.kind} ({res.api_version}){where}"
        token = ""
        while True:
            query = [("limit", str(page_size))]
            if label_selector:
                query.append(("labelSelector", label_selector))
            if token:
                query.append(("continue", token))
            doc = self._request(method="GET", path=path, what=what, query=query)
            assert doc is not None
            self.list_calls += 1
            self.list_calls_by_kind[res.kind] += 1
            token = str((doc.get("metadata") or {}).get("continue") or "")
            items = [i for i in doc.get("items") or [] if isinstance(i, dict)]
            del doc
            yield items
            del items
            if not token:
                return

    def get_object(self, *, ref: ObjectRef) -> dict[str, Any] | None:
        """One object (an Argo CD Application, a Flux Kustomization), or None when it does not exist."""
        res = self.resource_for(api_version=ref.api_version, kind=ref.kind)
        path = res.object_path(namespace=ref.namespace, name=ref.name)
        return self._request(method="GET", path=path, what=f"get {ref}", allow_404=True)

    # ------------------------------------------------------------ dry-run

    def dry_run_apply(self, *, body: Mapping[str, Any]) -> dict[str, Any]:
        """The object as the API server would store it if ``body`` were server-side applied.

        PATCH with ``application/apply-patch+yaml``, ``dryRun=All``, ``force=true`` and field manager
        ``writeback-dryrun``: defaults and mutating webhooks run, nothing is persisted, and the fields Git
        does not declare are left alone (never a dry-run create, which 409s, or a PUT, which resets them).
        """
        api_version, kind = str(body.get("apiVersion", "")), str(body.get("kind", ""))
        meta = body.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), meta.get("namespace")
        ref = ObjectRef(api_version=api_version, kind=kind, namespace=namespace, name=name)
        res = self.resource_for(api_version=api_version, kind=kind)
        if res.namespaced and not namespace:
            raise ClusterError(f"dry-run apply of {ref}: a namespaced object needs metadata.namespace")
        path = res.object_path(namespace=namespace if res.namespaced else None, name=name)
        query = [("dryRun", "All"), ("force", "true"), ("fieldManager", DRY_RUN_MANAGER)]
        self.dry_run_calls += 1
        self.dry_run_refs.append(ref)
        doc = self._request(
            method="PATCH",
            path=path,
            what=f"dry-run apply of {ref}",
            query=query,
            body=json.dumps(body),  # JSON is YAML 1.2
            content_type="application/apply-patch+yaml",
        )
        assert doc is not None
        return doc

    def dry_run_create(self, *, body: Mapping[str, Any], twin_of: ObjectRef) -> dict[str, Any]:
        """The object as the API server would store it if ``body`` were created (``dryRun=All``): defaulting and
        admission run, nothing is persisted. ``body`` is the twin of the object ``twin_of`` (``core.twins``: the
        same manifest under ``metadata.generateName``), so the answer depends on the manifest alone."""
        namespace = twin_of.namespace
        res = self.resource_for(api_version=twin_of.api_version, kind=twin_of.kind)
        what = f"dry-run create of a twin of {twin_of}"
        if res.namespaced and not namespace:
            raise ClusterError(f"{what}: a namespaced object needs metadata.namespace")
        path = res.collection_path(namespace=namespace if res.namespaced else None)
        query = [("dryRun", "All"), ("fieldManager", DRY_RUN_MANAGER)]
        self.dry_run_calls += 1
        self.dry_run_refs.append(twin_of)
        doc = self._request(
            method="POST", path=path, what=what, query=query, body=dict(body), content_type="application/json"
        )
        assert doc is not None
        return doc
