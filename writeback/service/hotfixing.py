"""Catch a hotfix before the GitOps controller wipes it, and keep every one.

The watch sees every write. When a write to a watched object is a person's (not a controller's, not the GitOps
tool's), it is captured into durable state, one capture per write (keyed with its manager, time and
resourceVersion), with the write's own change: the fields that differ from the version just before it. Then an
evaluation of its target is triggered (debounced). Fields at ``policy.sensitive_paths`` are removed before the
capture is stored (``writeback.capture.redaction``) and taken from the live object when it is used. During a
cycle, ``CapturingCluster`` serves each object with captures as the live object with every write's change that
the GitOps controller took back put back, in time order (``writeback.capture.composing``), and records what
became of each write, so the PR carries every change Git does not have yet and names each write's manager and
time, and says which were dropped: replaced by a later write of a person, or carried by Git.

Which write is a person's, its own change and what a capture may hold is ``writeback.capture.hotfixes``;
this module holds the I/O: the watch-event handler, the store, the clock and the cluster wrapper.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from writeback.adapters.hotfix_store import HotfixStore
from writeback.adapters.kube.cluster import DEFAULT_PAGE_SIZE, Cluster, Resource
from writeback.adapters.kube.watching import WatchEvent
from writeback.capture.composing import Composed, compose, settled
from writeback.capture.hotfixes import own_change, person_wrote, redacted_capture
from writeback.kube.paths import format_path
from writeback.kube.pathtypes import FieldPath
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import Capture, CapturedHotfix, Decision, Drift, HotfixState, LiveObject
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
    """The watch-event handler of one target: capture a person's write, then ``on_capture`` (the trigger).

    One capture per write: keyed with its manager, time and resourceVersion (two writes in one second are two), and
    holding the write's own change (the fields that differ from the version just before it, which the watch has)."""

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
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def __call__(self, event: WatchEvent) -> None:
        if event.initial or event.type == "DELETED":
            return
        ref = _ref(event.object, event.resource)
        if ref.is_secret:
            return
        owner = person_wrote(event.previous, event.object, policy=self._policy)
        if owner is None:
            return
        changed = None if event.previous is None else own_change(event.previous, event.object)
        if changed is not None and not changed:
            return  # nothing a person can change moved (a status update that left the person's entry newest)
        meta = event.object.get("metadata") or {}
        uid, version = str(meta.get("uid", "")), str(meta.get("resourceVersion", ""))
        with self._lock:
            if (uid, version) in self._seen:  # the same write seen again
                return
            self._seen.add((uid, version))
        capture = Capture(
            target=self.target,
            ref=ref,
            manager=owner.manager,
            operation=owner.operation,
            time=owner.time or _now(),  # (a write that took the person's last fields leaves no time)
            captured_at=_now(),
            body=event.object,
            resource_version=version,
            changed=None if changed is None else tuple(format_path(p) for p in changed),
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
    """The ``Cluster`` protocol over another one; an object with captured writes is served with every write's
    change that the GitOps controller took back put back, in time order (``capture.composing``)."""

    def __init__(
        self, *, cluster: Cluster, store: HotfixStore, target: str, policy: Policy, ttl_seconds: float
    ) -> None:
        self._cluster = cluster
        self._store = store
        self._target = target
        self._policy = policy
        self._ttl = ttl_seconds
        self._hotfixes: list[CapturedHotfix] = []
        self._composed: dict[Identity, tuple[Composed, tuple[Capture, ...]]] = {}  # this cycle's, for ``settle``
        self._lock = threading.Lock()

    def begin_cycle(self) -> None:
        with self._lock:
            self._hotfixes = []
            self._composed = {}

    def settle(self, *, drifts: Iterable[Drift]) -> None:
        """After a complete plan: a capture whose fields no longer differ from the Git the controller applied
        (``drifts``: this cycle's, the ignored ones aside) is carried by Git; it stays, marked, while other
        captures of its object do (the PR says it is in Git), and goes when none is left but carried or replaced
        ones. A capture made during the cycle is left for the next one."""
        drifting: dict[Identity, list[FieldPath]] = defaultdict(list)
        for d in drifts:
            if d.decision is not Decision.IGNORE:
                drifting[d.resource.identity].append(d.path)
        with self._lock:
            composed, self._composed = self._composed, {}
        if not composed:
            return
        stored = self._store.load(target=self._target)
        for identity, (result, used) in composed.items():
            mine = [c for c in stored if c.ref.identity == identity]
            self._drop(mine, used=used, result=result, carried=settled(result, drifting=drifting.get(identity, [])))

    def _drop(self, mine: Sequence[Capture], *, used: Sequence[Capture], result: Composed, carried: Set[str]) -> None:
        """Mark the captures whose change Git carries; discard the object's captures once all are carried or
        replaced (a capture saved since ``used`` were read waits for the next cycle)."""
        if {c.key for c in mine} - {u.key for u in used}:
            return
        done = {c.key for c in mine if c.in_git or c.key in carried or c.key in result.replaced}
        if done == {c.key for c in mine}:
            for c in mine:
                self._store.discard(c)
                why = "a later write by a person changed the same fields" if c.key in result.replaced else "in Git"
                log.info("the captured change by %s to %s at %s is done with: %s", c.manager, c.ref, c.time, why,
                         extra={"target": self._target})  # fmt: skip
            return
        for c in mine:
            if c.key in carried and not c.in_git:
                self._store.save(replace(c, in_git=True))

    def reverted(self) -> tuple[CapturedHotfix, ...]:
        """What became of the captured writes this cycle used (for the PR body)."""
        with self._lock:
            return tuple(self._hotfixes)

    def list_objects(self, *, selector: Selector, page_size: int = DEFAULT_PAGE_SIZE) -> list[LiveObject]:
        live = self._cluster.list_objects(selector=selector, page_size=page_size)
        captures: dict[Identity, list[Capture]] = defaultdict(list)
        for c in self._store.load(target=self._target):
            captures[c.ref.identity].append(c)
        if not captures:
            return live
        return [obj if obj.ref.identity not in captures else self._resolve(obj, captures[obj.ref.identity])
                for obj in live]  # fmt: skip

    def _resolve(self, obj: LiveObject, captures: list[Capture]) -> LiveObject:
        kept: list[Capture] = []
        for capture in captures:
            clean = redacted_capture(capture, policy=self._policy)
            if clean is not capture:  # stored by an older version or before a pattern was added: purge the values
                self._store.save(clean)
                capture = clean
            if _age(capture.captured_at) > self._ttl:
                self._store.discard(capture)
                continue
            kept.append(capture)
        if not kept:
            return obj
        result = compose(obj.body, kept, policy=self._policy)
        if result.carried:  # the controller applied a captured value: Git carries it
            self._drop(kept, used=kept, result=result, carried=result.carried)
        with self._lock:
            self._hotfixes.extend(result.hotfixes)
            self._composed[obj.ref.identity] = (result, tuple(kept))
        for h in result.hotfixes:
            if h.state is HotfixState.REVERTED:
                log.info("%s was reverted by %s at %s; putting back the captured change by %s at %s", obj.ref,
                         h.reverted_by, h.reverted_at, h.manager, h.time, extra={"target": self._target})  # fmt: skip
        if not result.changed:
            return obj  # the live object tells the truth
        return LiveObject(ref=obj.ref, body=result.body, source=obj.source)

    def resource_for(self, *, api_version: str, kind: str) -> Resource:
        return self._cluster.resource_for(api_version=api_version, kind=kind)

    def dry_run_apply(self, *, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._cluster.dry_run_apply(body=body)

    def dry_run_create(self, *, body: Mapping[str, Any], twin_of: ObjectRef) -> dict[str, Any]:
        return self._cluster.dry_run_create(body=body, twin_of=twin_of)

    def get_object(self, *, ref: ObjectRef) -> dict[str, Any] | None:
        return self._cluster.get_object(ref=ref)

    def server_version(self) -> str:
        return self._cluster.server_version()


def _age(stamp: str) -> float:
    try:
        at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return 0.0
    return time.time() - at.timestamp()
