"""A watch-based cache per selected kind (the informer pattern), behind the same ``Cluster`` protocol.

List once, then watch from the list's resourceVersion with ``allowWatchBookmarks=true``; bookmarks move the
resourceVersion forward, and ``410 Gone`` (an expired resourceVersion) means: list again. A warm cycle reads
the in-memory store and makes no list call at all. ``WatchingCluster`` serves ``list_objects`` from informers
and delegates everything else (discovery, dry-runs, single GETs) to the direct ``KubeCluster``.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from writeback.adapters.kube.api_errors import api_error, body_message, for_status
from writeback.adapters.kube.cluster import DEFAULT_PAGE_SIZE, KubeCluster, Resource
from writeback.adapters.kube.counting import CountingCluster, RequestHook
from writeback.errors import ClusterError
from writeback.kube.refs import ObjectRef
from writeback.model import LiveObject, Source
from writeback.settings import Selector

log = logging.getLogger(__name__)

_CONNECT_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchEvent:
    """One change seen by an informer (``initial`` for the objects of a (re)list)."""

    type: str  # ADDED | MODIFIED | DELETED
    object: Mapping[str, Any]
    resource: Resource
    initial: bool = False
    previous: Mapping[str, Any] | None = None  # the version the store held just before (None: not seen)


class Gone(ClusterError):
    """410 Gone: the resourceVersion is too old; the informer lists again."""


EventHandler = Callable[[WatchEvent], None]


class Informer:
    """One kind in one namespace (or cluster-wide) with an optional label selector."""

    def __init__(
        self,
        *,
        api_client: Any,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
        on_event: EventHandler | None = None,
        on_request: RequestHook | None = None,
        watch_seconds: int = 240,
        page_size: int = DEFAULT_PAGE_SIZE,
        resource_version: str | None = None,
    ) -> None:
        self._api = api_client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self._on_event = on_event
        self._on_request = on_request
        self._watch_seconds = watch_seconds
        self._page_size = page_size
        self._store: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._response: Any = None
        self._thread: threading.Thread | None = None
        self.resource_version = resource_version  # given: watch from there first (the relist test uses it)
        self.generation = 0  # moves on at every change of the store
        self.list_calls = 0
        self.watch_calls = 0
        self.relists = 0
        self.error: ClusterError | None = None
        if resource_version is not None:
            self._synced.set()

    @property
    def what(self) -> str:
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f"{self.resource.kind} ({self.resource.api_version}){where}"

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"informer {self.what}", daemon=True)
        self._thread.start()

    def wait_synced(self, *, timeout: float) -> None:
        """Block until the first list is in the store; raise the list's error (naming the kind) if it failed.

        The informer keeps retrying in the background, so a later cycle may find it synced.
        """
        deadline = time.monotonic() + timeout
        while not self._synced.wait(0.1):
            if self.error is not None:
                raise self.error
            if time.monotonic() > deadline:
                raise ClusterError(f"watch of {self.what}: no initial list within {timeout:.0f}s")

    def stop(self, *, timeout: float = 5.0) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            try:
                response.response.shutdown()  # unblocks a read waiting on the socket (urllib3 >= 2.3)
            except Exception:
                log.debug("closing the watch of %s failed", self.what, exc_info=True)
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    def objects(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._store.values())

    def snapshot(self) -> tuple[int, list[dict[str, Any]]]:
        """The store's generation and its objects, read together."""
        with self._lock:
            return self.generation, list(self._store.values())

    # ------------------------------------------------------------ the loop

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self.relist()
                began = time.monotonic()
                self.watch()
                failures = 0
                if time.monotonic() - began < 1.0:  # a server that ends watches at once: do not spin
                    self._stop.wait(1.0)
            except Gone:
                log.info("resourceVersion expired, listing again", extra={"kind": self.resource.kind})
                self.resource_version = None
            except ClusterError as e:
                self.error = e
                failures += 1
                delay = min(30.0, 0.5 * 2**failures) * random.uniform(0.8, 1.2)
                log.warning("watch of %s failed (%s); retrying in %.1fs", self.what, e, delay)
                self._stop.wait(delay)

    def relist(self) -> None:
        """One paginated list; replaces the store and moves the resourceVersion to the list's."""
        items: list[dict[str, Any]] = []
        token, version = "", ""
        while True:
            query = [("limit", str(self._page_size)), *self._selector_query()]
            if token:
                query.append(("continue", token))
            doc = _json(self._call(verb="list", query=query, stream=False))
            self.list_calls += 1
            items.extend(i for i in doc.get("items") or [] if isinstance(i, dict))
            meta = doc.get("metadata") or {}
            token, version = str(meta.get("continue") or ""), str(meta.get("resourceVersion") or "")
            if not token:
                break
        store = {}
        for item in items:
            item.setdefault("apiVersion", self.resource.api_version)
            item.setdefault("kind", self.resource.kind)
            store[_key(item)] = item
        with self._lock:
            gone = [obj for key, obj in self._store.items() if key not in store]
            self._store = store
            self.generation += 1
        self.relists += 1
        self.resource_version = version
        self.error = None
        self._synced.set()
        for obj in gone:
            self._emit(WatchEvent(type="DELETED", object=obj, resource=self.resource, initial=True))
        for obj in items:
            self._emit(WatchEvent(type="ADDED", object=obj, resource=self.resource, initial=True))

    def watch(self) -> None:
        """One watch request from the current resourceVersion until the server ends it; ``Gone`` on 410."""
        timeout = int(self._watch_seconds * random.uniform(0.9, 1.1))
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", str(self.resource_version)),
            ("timeoutSeconds", str(timeout)),
            *self._selector_query(),
        ]
        response = self._call(verb="watch", query=query, stream=True, read_timeout=timeout + 30.0)
        self.watch_calls += 1
        self._response = response
        try:
            for line in _lines(response):
                if self._stop.is_set():
                    return
                self._apply(json.loads(line))
        except ClusterError:
            raise
        except (OSError, ValueError) as e:
            if not self._stop.is_set():
                raise ClusterError(f"watch of {self.what}: the stream broke: {e}") from e
        except Exception as e:  # urllib3's ProtocolError and friends
            if not self._stop.is_set():
                raise ClusterError(f"watch of {self.what}: the stream broke: {e}") from e
        finally:
            self._response = None
            response.response.release_conn()

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind, obj = str(event.get("type", "")), event.get("object")
        if not isinstance(obj, dict):
            return
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(f"watch of {self.what}: {obj.get('message', 'resourceVersion too old')}")
            raise ClusterError(f"watch of {self.what}: {obj.get('message', obj)}")
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            self.resource_version = version or self.resource_version
            return
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        with self._lock:
            if kind == "DELETED":
                previous = self._store.pop(_key(obj), None)
            else:
                previous = self._store.get(_key(obj))
                self._store[_key(obj)] = obj
            self.generation += 1
        self.resource_version = version or self.resource_version
        self._emit(WatchEvent(type=kind, object=obj, resource=self.resource, previous=previous))

    def _emit(self, event: WatchEvent) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:  # a handler's bug must not kill the informer
            log.exception("watch event handler failed for %s", self.what)

    # ------------------------------------------------------------ HTTP

    def _selector_query(self) -> list[tuple[str, str]]:
        return [("labelSelector", self.label_selector)] if self.label_selector else []

    def _call(self, *, verb: str, query: list[tuple[str, str]], stream: bool, read_timeout: float = 120.0) -> Any:
        from kubernetes.client.exceptions import ApiException, OpenApiException
        from urllib3.exceptions import HTTPError

        path = self.resource.collection_path(namespace=self.namespace)
        if self._on_request is not None:
            self._on_request(verb)
        try:
            request = self._api.param_serialize(
                method="GET",
                resource_path=path,
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(*request, _request_timeout=(_CONNECT_TIMEOUT, read_timeout))
        except (ApiException, OpenApiException, HTTPError, OSError) as e:
            raise api_error(e, what=f"{verb} {self.what}") from e
        if response.status == 410:
            response.read()
            raise Gone(f"{verb} {self.what}: 410 Gone (resourceVersion too old)")
        if not 200 <= response.status <= 299:
            raise for_status(
                response.status, f"{verb} {self.what}: HTTP {response.status}: {body_message(response.read())}"
            )
        return response if stream else response.read()


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _json(data: bytes) -> dict[str, Any]:
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ClusterError("the API server returned something other than a JSON object")
    return doc


def _lines(response: Any) -> Iterator[bytes]:
    buffer = b""
    for chunk in response.response.stream(amt=None, decode_content=True):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


class WatchingCluster(CountingCluster):
    """The ``Cluster`` protocol with ``list_objects`` served from informers (one per kind and namespace)."""

    def __init__(
        self,
        *,
        cluster: KubeCluster,
        api_client: Any,
        on_event: EventHandler | None = None,
        on_request: RequestHook | None = None,
        sync_timeout: float = 60.0,
    ) -> None:
        super().__init__(cluster=cluster, count=on_request)
        self._api = api_client
        self._on_event = on_event
        self._sync_timeout = sync_timeout
        self._informers: dict[tuple[str, str, str, str], Informer] = {}
        self._lists: dict[tuple[int, tuple[str, ...]], tuple[int, list[LiveObject]]] = {}
        self._lock = threading.Lock()

    @property
    def informers(self) -> tuple[Informer, ...]:
        with self._lock:
            return tuple(self._informers.values())

    @property
    def list_calls(self) -> int:
        return sum(i.list_calls for i in self.informers) + self._cluster.list_calls

    def informers_for(self, *, selector: Selector) -> list[Informer]:
        """The informers covering ``selector``, started (and synced) on first use."""
        res = self._cluster.resource_for(api_version=selector.api_version, kind=selector.kind)
        scopes: tuple[str | None, ...] = (
            tuple(selector.namespaces) if res.namespaced and selector.namespaces else (None,)
        )
        out, new = [], []
        with self._lock:
            for ns in scopes:
                key = (res.api_version, res.kind, ns or "", selector.label_selector or "")
                if key not in self._informers:
                    informer = Informer(
                        api_client=self._api,
                        resource=res,
                        namespace=ns,
                        label_selector=selector.label_selector,
                        on_event=self._on_event,
                        on_request=self._on_request,
                    )
                    self._informers[key] = informer
                    new.append(informer)
                out.append(self._informers[key])
        for informer in new:
            informer.start()
        for informer in out:
            informer.wait_synced(timeout=self._sync_timeout)
        return out

    # ------------------------------------------------------------ the Cluster protocol (the rest: CountingCluster)

    def list_objects(self, *, selector: Selector, page_size: int = DEFAULT_PAGE_SIZE) -> list[LiveObject]:
        """The cached objects themselves, not copies: the watch replaces an object, never changes it in place, and
        no cycle changes the objects it reads (``tests/service/test_watching.py`` checks both). The list of an
        informer whose store has not changed since the last call is the same list of the same ``LiveObject``s."""
        excluded = tuple(sorted(selector.exclude))
        out: list[LiveObject] = []
        for informer in self.informers_for(selector=selector):
            out.extend(self._listed(informer, excluded))
        return out

    def _listed(self, informer: Informer, excluded: tuple[str, ...]) -> list[LiveObject]:
        key = (id(informer), excluded)
        with self._lock:
            last = self._lists.get(key)
        if last is not None and last[0] == informer.generation:  # unchanged: not even its store's values copied
            return last[1]
        generation, items = informer.snapshot()
        if last is not None and last[0] == generation:
            return last[1]
        before = {id(o.body): o for o in last[1]} if last is not None else {}
        skip = set(excluded)
        res = informer.resource
        out: list[LiveObject] = []
        for item in sorted(items, key=_key):
            kept = before.get(id(item))
            if kept is not None and kept.body is item:  # the same object: its LiveObject too
                out.append(kept)
                continue
            meta = item.get("metadata") or {}
            name, ns = str(meta.get("name", "")), meta.get("namespace") or None
            if name in skip or (ns and f"{ns}/{name}" in skip):
                continue
            ref = ObjectRef(api_version=res.api_version, kind=res.kind, namespace=ns, name=name)
            out.append(LiveObject(ref=ref, body=item, source=Source.CLUSTER))
        with self._lock:
            self._lists[key] = (generation, out)
        return out

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()
