"""Catch a hotfix before the GitOps controller wipes it.

The watch sees every write. When the newest managedFields entry of a watched object belongs to a person (not
a controller, not the GitOps tool), the object is captured as the person left it into durable state and an
evaluation of its target is triggered (debounced). Fields at ``policy.sensitive_paths`` are removed before
the capture is stored (``writeback.capture.redaction``) and taken from the live object when it is used. During
a cycle, ``CapturingCluster`` serves the captured object instead of the live one when the GitOps controller
has reverted it since, and records that, so the PR can say plainly that the change was reverted in the cluster
at time T.

Which write is a person's, whether it was reverted and what a capture may hold is ``writeback.capture.hotfixes``;
this module holds the I/O: the watch-event handler, the store, the clock and the cluster wrapper.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from writeback.adapters.hotfix_store import HotfixStore
from writeback.adapters.kube.cluster import DEFAULT_PAGE_SIZE, Cluster, Resource
from writeback.adapters.kube.watching import WatchEvent
from writeback.capture.hotfixes import (
    backport_body,
    essence,
    person_write,
    redacted_capture,
    reverting_writer,
    synced_since,
)
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import Capture, CapturedHotfix, LiveObject
from writeback.settings import Policy, Selector

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ref(obj: Mapping[str, Any], resource: Resource) -> ObjectRef:
    meta = obj.get("metadata") or {}
    return ObjectRef(
        api_version=resource.api_version,
        kind=resource.kind,
        namespace=meta.get("namespace") or None,
        name=str(meta.get("name", "")),
    )


class HotfixCapturer:
    """The watch-event handler of one target: capture a person's write, then ``on_capture`` (the trigger)."""

    def __init__(
        self,
        *,
        target: str,
        policy: Policy,
        store: HotfixStore,
        on_capture: Callable[[Capture], None],
    ) -> None:
        self.target = target
        self._policy = policy
        self._store = store
        self._on_capture = on_capture
        self._seen: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

    def __call__(self, event: WatchEvent) -> None:
        if event.initial or event.type == "DELETED":
            return
        ref = _ref(event.object, event.resource)
        if ref.is_secret:
            return
        owner = person_write(event.object, policy=self._policy)
        if owner is None:
            return
        uid = str((event.object.get("metadata") or {}).get("uid", ""))
        key = (uid, owner.manager, owner.time or "")
        with self._lock:
            if key in self._seen:  # the same write seen again (a status update, a revert in the same second)
                return
            self._seen.add(key)
        capture = Capture(
            target=self.target,
            ref=ref,
            manager=owner.manager,
            operation=owner.operation,
            time=owner.time,
            captured_at=_now(),
            body=event.object,
        )
        capture = redacted_capture(capture, policy=self._policy)  # no sensitive value is ever stored
        self._store.save(capture)
        log.info(
            "captured a live change by %s to %s",
            owner.manager,
            ref,
            extra={"target": self.target, "manager": owner.manager, "changed_at": owner.time or ""},
        )
        self._on_capture(capture)


class CapturingCluster:
    """The ``Cluster`` protocol over another one; a reverted object is served as the person left it."""

    def __init__(
        self, *, cluster: Cluster, store: HotfixStore, target: str, policy: Policy, ttl_seconds: float
    ) -> None:
        self._cluster = cluster
        self._store = store
        self._target = target
        self._policy = policy
        self._ttl = ttl_seconds
        self._reverted: list[CapturedHotfix] = []
        self._live: dict[Identity, Capture] = {}  # captures whose object was served live as the person left it
        self._lock = threading.Lock()

    def begin_cycle(self) -> None:
        with self._lock:
            self._reverted = []
            self._live = {}

    def settle(self, *, unsettled: Collection[Identity]) -> None:
        """After a complete plan: a capture whose object this cycle saw live as the person left it, and which
        shows no drift against the Git the controller applied (only ``unsettled`` objects do), is done with: Git
        carries the change, so no revert can take it away (the controller applied the same value, or a commit
        with it was applied without touching the object)."""
        with self._lock:
            done = [c for identity, c in self._live.items() if identity not in unsettled]
            self._live = {}
        if not done:
            return
        stored = {c.key: c for c in self._store.load(target=self._target)}
        for capture in done:
            if stored.get(capture.key) == capture:  # not a newer change to the object, captured during the cycle
                self._store.discard(capture)

    def reverted(self) -> tuple[CapturedHotfix, ...]:
        """The captured changes the controller reverted that this cycle used (for the PR body)."""
        with self._lock:
            return tuple(self._reverted)

    def list_objects(self, *, selector: Selector, page_size: int = DEFAULT_PAGE_SIZE) -> list[LiveObject]:
        live = self._cluster.list_objects(selector=selector, page_size=page_size)
        captures = {c.ref.identity: c for c in self._store.load(target=self._target)}
        if not captures:
            return live
        out = []
        for obj in live:
            capture = captures.get(obj.ref.identity)
            out.append(obj if capture is None else self._resolve(obj, capture))
        return out

    def _resolve(self, obj: LiveObject, capture: Capture) -> LiveObject:
        clean = redacted_capture(capture, policy=self._policy)
        if clean is not capture:  # stored by an older version or before a pattern was added: purge the values
            self._store.save(clean)
            capture = clean
        body = backport_body(capture, live=obj.body)
        if _age(capture.captured_at) > self._ttl:
            self._store.discard(capture)
            return obj
        if essence(obj.body) == essence(body):  # live as the person left it
            if synced_since(live=obj.body, capture=capture, policy=self._policy):
                self._store.discard(capture)  # the controller applied it since: Git carries it (merged and synced)
            else:  # kept: the controller's next reconcile may still revert it (unless Git has it: ``settle``)
                with self._lock:
                    self._live[obj.ref.identity] = capture
            return obj
        writer = reverting_writer(live=obj.body, capture=capture, policy=self._policy)
        if writer is None:
            return obj  # the person's fields are still theirs: the live object tells the truth
        hotfix = CapturedHotfix(
            resource=obj.ref,
            manager=capture.manager,
            time=capture.time,
            reverted_at=writer.time,
            reverted_by=writer.manager,
        )
        with self._lock:
            self._reverted.append(hotfix)
        log.info(
            "%s was reverted by %s at %s; using the captured change by %s",
            obj.ref,
            writer.manager,
            writer.time,
            capture.manager,
            extra={"target": self._target},
        )
        return LiveObject(ref=obj.ref, body=body, source=obj.source)

    def resource_for(self, *, api_version: str, kind: str) -> Resource:
        return self._cluster.resource_for(api_version=api_version, kind=kind)

    def dry_run_apply(self, *, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._cluster.dry_run_apply(body=body)

    def dry_run_create(self, *, body: Mapping[str, Any], twin_of: ObjectRef) -> dict[str, Any]:
        return self._cluster.dry_run_create(body=body, twin_of=twin_of)

    def get_object(self, *, ref: ObjectRef) -> dict[str, Any] | None:
        return self._cluster.get_object(ref=ref)


def _age(stamp: str) -> float:
    try:
        at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return 0.0
    return time.time() - at.timestamp()
