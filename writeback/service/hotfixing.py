"""Catch a hotfix before the GitOps controller wipes it.

The watch sees every write. When the newest managedFields entry of a watched object belongs to a person (not
a controller, not the GitOps tool), the object is captured as the person left it into durable state and an
evaluation of its target is triggered (debounced). Fields at ``policy.sensitive_paths`` are removed before
the capture is stored (``writeback.core.scrubbing``) and taken from the live object when it is used. During
a cycle, ``CapturingCluster`` serves the captured object instead of the live one when the GitOps controller
has reverted it since, and records that, so the PR can say plainly that the change was reverted in the cluster
at time T.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from writeback.adapters.cluster import DEFAULT_PAGE_SIZE, Cluster, Resource
from writeback.adapters.hotfixes import Capture, HotfixStore
from writeback.adapters.watching import WatchEvent
from writeback.config import Policy, Selector
from writeback.core.deciding import Role, manager_role
from writeback.core.scrubbing import restore, scrub
from writeback.model import CapturedHotfix, FieldOwner, LiveObject, ObjectRef
from writeback.paths import format_path, parse_path, parse_pattern

log = logging.getLogger(__name__)

_SERVER_META = ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink")


def _entries(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    fields = (body.get("metadata") or {}).get("managedFields") or []
    return [e for e in fields if isinstance(e, Mapping) and e.get("subresource", "") != "status"]


def newest_writer(body: Mapping[str, Any], *, policy: Policy) -> FieldOwner | None:
    """The manager of the newest managedFields entry (a person wins a tie within the same second)."""
    entries = _entries(body)
    if not entries:
        return None
    latest = max(str(e.get("time") or "") for e in entries)
    tied = [e for e in entries if str(e.get("time") or "") == latest]
    tied.sort(key=lambda e: manager_role(policy, str(e.get("manager", ""))) is not Role.PERSON)
    e = tied[0]
    return FieldOwner(
        manager=str(e.get("manager", "")),
        operation=str(e.get("operation", "")),
        subresource=str(e.get("subresource", "")),
        time=str(e.get("time")) if e.get("time") else None,
    )


def person_write(body: Mapping[str, Any], *, policy: Policy) -> FieldOwner | None:
    """The person's write, when the newest write to ``body`` was made by one; else None."""
    owner = newest_writer(body, policy=policy)
    if owner is None or manager_role(policy, owner.manager) is not Role.PERSON:
        return None
    return owner


def _person_fields(body: Mapping[str, Any], capture: Capture) -> Any:
    for e in _entries(body):
        if e.get("manager") == capture.manager and e.get("operation") == capture.operation:
            return e.get("fieldsV1")
    return None


def reverting_writer(*, live: Mapping[str, Any], capture: Capture, policy: Policy) -> FieldOwner | None:
    """The GitOps write that took the person's fields back since the capture, or None if they are still theirs.

    Server-side apply moves a field's ownership to whoever overwrites it (a forced apply, or an update), so
    the person's managedFields entry losing fields is the revert; the GitOps manager that wrote at or after
    the capture is who did it.
    """
    kept = _person_fields(live, capture)
    if kept is not None and kept == _person_fields(capture.body, capture):
        return None
    after = [
        e
        for e in _entries(live)
        if manager_role(policy, str(e.get("manager", ""))) is Role.GITOPS
        and str(e.get("time") or "") >= (capture.time or "")
    ]
    if not after:
        return None
    e = max(after, key=lambda e: str(e.get("time") or ""))
    return FieldOwner(
        manager=str(e.get("manager", "")),
        operation=str(e.get("operation", "")),
        time=str(e.get("time")) if e.get("time") else None,
    )


def essence(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a person can change: the object without status and server-set metadata."""
    out = {k: v for k, v in body.items() if k != "status"}
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in _SERVER_META}
    out["metadata"] = meta
    return out


def _patterns(policy: Policy) -> tuple[tuple[Any, ...], ...]:
    return tuple(parse_pattern(p) for p in policy.sensitive_paths)


def redacted_capture(capture: Capture, *, policy: Policy) -> Capture:
    """``capture`` without the values at ``policy.sensitive_paths`` (the removed paths are added to it)."""
    done = scrub(capture.body, patterns=_patterns(policy), kind=capture.ref.kind)
    if not done.removed and not done.removed_last_applied:
        return capture
    return replace(
        capture,
        body=done.body,
        redacted=(*capture.redacted, *(format_path(p) for p in done.removed)),
        redacted_last_applied=(*capture.redacted_last_applied, *(format_path(p) for p in done.removed_last_applied)),
    )


def backport_body(capture: Capture, *, live: Mapping[str, Any]) -> dict[str, Any]:
    """The captured object with its removed sensitive fields taken from ``live`` (never false drift)."""
    return restore(
        capture.body,
        live=live,
        removed=[parse_path(p) for p in capture.redacted],
        removed_last_applied=[parse_path(p) for p in capture.redacted_last_applied],
    )


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
        if ref.group == "" and ref.kind == "Secret":
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
        self._lock = threading.Lock()

    def begin_cycle(self) -> None:
        with self._lock:
            self._reverted = []

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
        if _age(capture.captured_at) > self._ttl or essence(obj.body) == essence(body):
            self._store.discard(capture)  # expired, or the person's change is live (kept, or merged and synced)
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
