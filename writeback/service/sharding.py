"""The Lease coordinator: replicas share the targets through coordination.k8s.io Leases.

Each replica renews a heartbeat Lease ``writeback-replica-<identity>``; the live replicas are the heartbeat Leases
that have not expired. Each target has a Lease ``writeback-target-<name>``; a replica works on a target only while
it holds that Lease, and holds at most ``ceil(targets / live replicas)`` of them. ``LeaseCoordinator`` implements
``writeback.service.guards.Coordinator`` (``SoleReplica`` there is the one without Leases).
The arithmetic (fair share, preference, expiry, trust) is ``writeback.service.shares``; the Lease reads and
conditional writes are ``writeback.adapters.kube.leasing``; this module runs the rounds.

Expiry follows client-go: a Lease is expired when its record has not changed for ``leaseDurationSeconds`` as timed
by the *observer's* monotonic clock, so clock skew between nodes does not matter. The holder trusts its Lease only
until ``renew_deadline`` (2/3 of the duration) after the *start* of its last successful renewal, which is always
earlier than any other replica can see it expire: no target is ever run by two replicas at once.

The seam for the scheduler::

    coordinator.start()                       # background thread: heartbeat, renew, acquire, rebalance
    guard = coordinator.begin(target.name)    # None: not ours now, skip this run
    if guard is not None:
        with guard:                           # a Lease being released waits for the run to end
            run_pipeline(..., still_leader=guard.still_leader)   # checked between stages (safe points)
    coordinator.stop(grace_seconds=30)        # on SIGTERM: releases the Leases so others take over at once
"""

from __future__ import annotations

import logging
import math
import os
import platform
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from writeback.adapters.kube.leasing import LeaseRecord, LeaseStore
from writeback.config import Leader
from writeback.errors import ClusterError
from writeback.kube.wellknown import LEASE_ROLE_LABEL as ROLE_LABEL
from writeback.kube.wellknown import LEASE_TARGET_ANNOTATION as TARGET_ANNOTATION
from writeback.kube.wellknown import MANAGED_BY
from writeback.kube.wellknown import WRITEBACK as MANAGER
from writeback.service.guards import Coordinator, RunGuard, SoleReplica
from writeback.service.shares import (
    LeaseTiming,
    ShardPlan,
    ShardView,
    expired,
    observe,
    plan_shard,
    replica_lease_name,
    target_lease_name,
)

__all__ = ["Coordinator", "LeaseCoordinator", "RunGuard", "SoleReplica", "coordinator_for", "default_identity"]

log = logging.getLogger(__name__)
SELECTOR = f"{MANAGED_BY}={MANAGER}"


def coordinator_for(
    *, leader: Leader, targets: Sequence[str], api_client: Any | None = None
) -> LeaseCoordinator | SoleReplica:
    """The coordinator the config asks for: Leases in ``leader.namespace`` when ``leader.enabled``, else none.

    ``api_client`` defaults to the usual credentials (``$KUBECONFIG``, ``~/.kube/config``, then in-cluster).
    The caller calls ``start()`` before scheduling and ``stop()`` after the scheduler has shut down.
    """
    if not leader.enabled:
        return SoleReplica(targets=targets)
    if api_client is None:
        from writeback.adapters.kube.kubeconfigs import ClusterAccess, new_api_client

        api_client = new_api_client(access=ClusterAccess())
    return LeaseCoordinator.connect(
        api_client=api_client,
        namespace=leader.namespace,
        targets=targets,
        identity=leader.identity,
        lease_seconds=leader.lease_seconds,
    )


@dataclass(kw_only=True)
class _Held:
    record: LeaseRecord
    renewed_at: float  # monotonic time at which the last successful write was *sent*
    draining: bool = False
    running: int = 0


def default_identity() -> str:
    """``$POD_NAME`` in a cluster, else host name, pid and a random suffix: unique per process."""
    pod = os.environ.get("POD_NAME")
    if pod:
        return pod
    return f"{platform.node() or 'host'}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class LeaseCoordinator:
    """Shares ``targets`` with the other replicas that use the same namespace's Leases."""

    def __init__(
        self,
        *,
        store: LeaseStore,
        targets: Sequence[str],
        identity: str | None = None,
        lease_seconds: float = 15,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.identity = identity or default_identity()
        self.targets = tuple(dict.fromkeys(targets))
        self.timing = LeaseTiming.for_seconds(lease_seconds)
        self._clock = clock
        self._wall = wall
        self._lease_of = {t: target_lease_name(t) for t in self.targets}
        self._beat_name = replica_lease_name(self.identity)
        self._beat: LeaseRecord | None = None
        self._held: dict[str, _Held] = {}
        self._seen: dict[str, tuple[str, float]] = {}  # lease name -> (resourceVersion, first seen at)
        self._live: frozenset[str] = frozenset({self.identity})
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._closing = False
        self._grace_until = math.inf
        self._thread: threading.Thread | None = None

    @classmethod
    def connect(
        cls, *, api_client: Any, namespace: str, targets: Sequence[str], identity: str | None, lease_seconds: float
    ) -> LeaseCoordinator:
        timeout = max(1.0, min(5.0, lease_seconds / 3))
        store = LeaseStore(api_client=api_client, namespace=namespace, request_timeout=timeout)
        return cls(store=store, targets=targets, identity=identity, lease_seconds=lease_seconds)

    @property
    def lease_seconds(self) -> int:
        return self.timing.lease_seconds

    # --- the seam -------------------------------------------------------------------------------------------------

    def still_leader(self, target: str) -> bool:
        with self._lock:
            held = self._held.get(target)
            return (
                held is not None
                and not held.draining
                and not self._closing
                and self.timing.trusted(renewed_at=held.renewed_at, now=self._clock())
            )

    def owned_targets(self) -> frozenset[str]:
        with self._lock:
            return frozenset(t for t in self._held if self.still_leader(t))

    def live_replicas(self) -> frozenset[str]:
        with self._lock:
            return self._live

    def begin(self, target: str) -> RunGuard | None:
        """A guard for one run of ``target``, or None when this replica does not hold its Lease now."""
        with self._lock:
            if not self.still_leader(target):
                return None
            self._held[target].running += 1
        return RunGuard(target=target, check=lambda: self.still_leader(target), done=lambda: self._finished(target))

    def _finished(self, target: str) -> None:
        with self._lock:
            held = self._held.get(target)
            if held is not None and held.running > 0:
                held.running -= 1
                if held.draining and held.running == 0:
                    self._wake.set()  # hand the Lease back now rather than at the next tick

    # --- the loop -------------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="writeback-leases", daemon=True)
        self._thread.start()

    def stop(self, *, grace_seconds: float = 30.0) -> None:
        """Stop taking work, wait up to ``grace_seconds`` for running targets, release the Leases, end the thread."""
        with self._lock:
            self._closing = True
            self._grace_until = self._clock() + grace_seconds
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        else:
            self._drain_until_done()

    def _loop(self) -> None:
        while True:
            try:
                if self._closing:
                    self._drain_until_done()
                    return
                self.tick()
            except Exception:  # never let the coordination thread die silently
                log.exception("lease coordination round failed")
            self._wake.wait(self.timing.renew_interval)
            self._wake.clear()

    def _drain_until_done(self) -> None:
        while True:
            self.tick()
            with self._lock:
                if not self._held or self._clock() >= self._grace_until:
                    break
            self._wake.wait(min(0.2, self.timing.renew_interval))
            self._wake.clear()
        self._release_heartbeat()

    def tick(self) -> ShardPlan | None:
        """One round: heartbeat, observe all Leases, then renew, release and acquire per the fair share."""
        try:
            self._heartbeat()
            records = self.store.list(label_selector=SELECTOR)
        except ClusterError as e:
            log.warning("lease round skipped: %s", e)
            return None
        now = self._clock()
        self._seen = observe(self._seen, versions=((r.name, r.resource_version) for r in records), now=now)
        by_name = {r.name: r for r in records}
        live = {
            r.holder
            for r in records
            if r.labels.get(ROLE_LABEL) == "replica" and r.holder and not self._expired(r, now)
        }
        live.add(self.identity)
        self._collect_stale_heartbeats(records, now)
        with self._lock:
            self._live = frozenset(live)
            idle = [t for t, h in self._held.items() if h.running == 0]
            for target in [t for t in idle if not self.timing.trusted(renewed_at=self._held[t].renewed_at, now=now)]:
                log.warning("lease for target %s not renewed in time; letting it go", target)
                del self._held[target]
            mine = frozenset(self._held)
            closing = self._closing
        taken = frozenset(
            t
            for t, name in self._lease_of.items()
            if (r := by_name.get(name)) is not None
            and r.holder
            and r.holder != self.identity
            and not self._expired(r, now)
        )
        if closing:
            plan = ShardPlan(keep=(), acquire=(), release=tuple(sorted(mine)), share=0)
        else:
            plan = plan_shard(
                ShardView(me=self.identity, targets=self.targets, live_replicas=frozenset(live), mine=mine, taken=taken)
            )
        for target in plan.release:
            self._release(target)
        for target in plan.keep:
            self._renew(target, keep=True)
        for target in plan.acquire:
            self._acquire(target, by_name.get(self._lease_of[target]))
        return plan

    # --- Lease operations -----------------------------------------------------------------------------------------

    def _expired(self, record: LeaseRecord, now: float) -> bool:
        first_seen = self._seen.get(record.name, (record.resource_version, now))[1]
        return expired(holder=record.holder, first_seen=first_seen, duration_seconds=record.duration_seconds, now=now)

    def _labels(self, role: str) -> dict[str, str]:
        return {MANAGED_BY: MANAGER, ROLE_LABEL: role}

    def _heartbeat(self) -> None:
        if self._beat is not None:
            self._beat = self.store.write(
                record=self._beat, holder=self.identity, duration_seconds=self.lease_seconds, now=self._wall()
            )
            if self._beat is not None:
                return
        current = self.store.get(name=self._beat_name)
        if current is None:
            self._beat = self.store.create(
                name=self._beat_name,
                holder=self.identity,
                duration_seconds=self.lease_seconds,
                now=self._wall(),
                labels=self._labels("replica"),
            )
        else:
            self._beat = self.store.write(
                record=current, holder=self.identity, duration_seconds=self.lease_seconds, now=self._wall()
            )

    def _release_heartbeat(self) -> None:
        try:
            if self._beat is not None and not self.store.delete(record=self._beat):
                log.info("heartbeat lease %s changed meanwhile; left to expire", self._beat_name)
        except ClusterError as e:
            log.warning("heartbeat lease not removed (it will expire): %s", e)
        self._beat = None

    def _collect_stale_heartbeats(self, records: Sequence[LeaseRecord], now: float) -> None:
        """Delete heartbeat Leases of replicas long gone (pods get new names on every rollout)."""
        horizon = self._wall() - timedelta(seconds=self.timing.stale_heartbeat_seconds)
        for r in records:
            if r.labels.get(ROLE_LABEL) != "replica" or r.name == self._beat_name or not self._expired(r, now):
                continue
            if r.renew_time is None or r.renew_time < horizon:
                try:
                    self.store.delete(record=r)
                except ClusterError as e:
                    log.debug("stale heartbeat %s not removed: %s", r.name, e)

    def _renew(self, target: str, *, keep: bool = False) -> None:
        with self._lock:
            held = self._held.get(target)
            if held is None:
                return
            record = held.record
        sent = self._clock()
        try:
            renewed = self.store.write(
                record=record, holder=self.identity, duration_seconds=self.lease_seconds, now=self._wall()
            )
        except ClusterError as e:
            log.warning("lease for target %s not renewed: %s", target, e)
            return
        with self._lock:
            held = self._held.get(target)
            if held is None:
                return
            if renewed is None:
                log.warning("lost the lease for target %s to another replica", target)
                held.draining = True
                held.renewed_at = -math.inf  # still_leader() is False from now on
                if held.running == 0:
                    del self._held[target]
            else:
                held.record, held.renewed_at = renewed, sent
                if keep and held.draining:
                    held.draining = False  # the share grew back before the run had stopped

    def _acquire(self, target: str, current: LeaseRecord | None) -> None:
        sent = self._clock()
        try:
            if current is None:
                got = self.store.create(
                    name=self._lease_of[target],
                    holder=self.identity,
                    duration_seconds=self.lease_seconds,
                    now=self._wall(),
                    labels=self._labels("target"),
                    annotations={TARGET_ANNOTATION: target},
                )
            else:
                got = self.store.write(
                    record=current, holder=self.identity, duration_seconds=self.lease_seconds, now=self._wall()
                )
        except ClusterError as e:
            log.warning("lease for target %s not acquired: %s", target, e)
            return
        if got is None:
            log.debug("another replica took target %s first", target)
            return
        with self._lock:
            self._held[target] = _Held(record=got, renewed_at=sent)
        log.info("replica %s now runs target %s", self.identity, target)

    def _release(self, target: str) -> None:
        with self._lock:
            held = self._held.get(target)
            if held is None:
                return
            held.draining = True
            # a running target keeps its Lease until the run stops at its next safe point
            record = None if held.running > 0 else held.record
        if record is None:
            self._renew(target)
            return
        try:
            self.store.write(record=record, holder=None, duration_seconds=self.lease_seconds, now=self._wall())
        except ClusterError as e:
            log.warning("lease for target %s not released (it will expire): %s", target, e)
        with self._lock:
            held = self._held.get(target)
            if held is not None and held.running == 0:
                del self._held[target]
        log.info("replica %s handed target %s back", self.identity, target)
