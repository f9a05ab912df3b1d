"""The Lease primitives and the coordinator's safe-point check, in-process, on the real control plane."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from tests.support.polling import wait_until
from writeback.adapters.kube.leasing import LeaseStore
from writeback.errors import ClusterError
from writeback.service.sharding import LeaseCoordinator, SoleReplica
from writeback.service.shares import target_lease_name

pytestmark = pytest.mark.controlplane
NOW = datetime(2026, 1, 2, 3, 4, 5, 0, tzinfo=UTC)  # microsecond 0: still six digits on the wire


def test_optimistic_concurrency_conflict_means_someone_else_won(k8s: Any, namespace: str) -> None:
    store = LeaseStore(api_client=k8s, namespace=namespace)
    first = store.create(name="l", holder="a", duration_seconds=5, now=NOW, labels={"x": "y"})
    assert first is not None and first.holder == "a" and first.renew_time is not None
    assert abs((first.renew_time - NOW).total_seconds()) < 0.001
    assert store.create(name="l", holder="b", duration_seconds=5, now=NOW, labels={}) is None
    taken = store.write(record=first, holder="b", duration_seconds=5, now=NOW)
    assert taken is not None and taken.holder == "b" and taken.transitions == 1
    assert store.write(record=first, holder="a", duration_seconds=5, now=NOW) is None  # stale resourceVersion
    released = store.write(record=taken, holder=None, duration_seconds=5, now=NOW)
    assert released is not None and released.holder is None and released.labels == {"x": "y"}
    assert store.delete(record=taken) is False  # changed since it was read
    assert store.delete(record=released) is True
    assert store.get(name="l") is None


def test_client_errors_become_cluster_errors_naming_the_lease(controlplane: Any, namespace: str) -> None:
    from kubernetes import config

    api = config.new_client_from_config(config_file=controlplane.kubeconfig)
    api.set_default_header("Impersonate-User", "nobody@example.com")  # real RBAC: no rights at all
    with pytest.raises(ClusterError, match=rf"lease {namespace}/x failed: HTTP 403"):
        LeaseStore(api_client=api, namespace=namespace).get(name="x")
    nowhere = client.Configuration()
    nowhere.host = "https://127.0.0.1:1"
    with pytest.raises(ClusterError, match=rf"listing leases in namespace {namespace} failed"):
        LeaseStore(api_client=client.ApiClient(nowhere), namespace=namespace, request_timeout=2).list(label_selector="")


def test_a_replica_that_loses_its_lease_stops_at_the_next_safe_point(k8s: Any, namespace: str) -> None:
    ticks = itertools.count()
    coordinator = LeaseCoordinator(
        store=LeaseStore(api_client=k8s, namespace=namespace),
        targets=["prod"],
        identity="me",
        lease_seconds=30,
        clock=lambda: float(next(ticks)) * 0.001,
    )
    plan = coordinator.tick()
    assert plan is not None and plan.acquire == ("prod",)
    assert coordinator.owned_targets() == {"prod"}
    guard = coordinator.begin("prod")
    assert guard is not None and guard.still_leader()

    store = LeaseStore(api_client=k8s, namespace=namespace)  # an intruder overwrites the Lease
    current = store.get(name=target_lease_name("prod"))
    assert current is not None and current.holder == "me"
    assert store.write(record=current, holder="intruder", duration_seconds=30, now=datetime.now(UTC)) is not None

    coordinator.tick()  # the renewal gets 409 Conflict
    assert not guard.still_leader(), "the running pipeline must see the loss at its next safe point"
    assert coordinator.begin("prod") is None
    guard.end()
    coordinator.tick()
    assert coordinator.owned_targets() == frozenset()  # the intruder's Lease has not expired: no grab back
    assert store.get(name=target_lease_name("prod")).holder == "intruder"  # type: ignore[union-attr]


def test_sole_replica_owns_everything() -> None:
    sole = SoleReplica(targets=["a", "b"])
    assert sole.owned_targets() == {"a", "b"}
    assert sole.begin("c") is None
    guard = sole.begin("a")
    assert guard is not None and guard.still_leader()
    guard.end()
    assert not guard.still_leader()


def test_coordinator_for_follows_the_leader_config(k8s: Any, namespace: str) -> None:
    from writeback.config import Leader
    from writeback.service.sharding import coordinator_for

    assert isinstance(coordinator_for(leader=Leader(enabled=False), targets=["a"]), SoleReplica)
    leader = Leader(enabled=True, namespace=namespace, lease_seconds=4.5, identity="pod-1")
    coordinator = coordinator_for(leader=leader, targets=["a", "b", "a"], api_client=k8s)
    assert isinstance(coordinator, LeaseCoordinator)
    assert (coordinator.identity, coordinator.lease_seconds, coordinator.targets) == ("pod-1", 5, ("a", "b"))
    coordinator.start()
    try:
        wait_until(  # alone: it takes every target
            "the coordinator thread taking its targets", lambda: coordinator.owned_targets() == {"a", "b"}, timeout=20
        )
        store = LeaseStore(api_client=k8s, namespace=namespace)
        beat = store.get(name="writeback-replica-pod-1")
        assert beat is not None and beat.holder == "pod-1" and beat.duration_seconds == 5
    finally:
        coordinator.stop(grace_seconds=5)
    assert coordinator.owned_targets() == frozenset()
    assert store.get(name="writeback-replica-pod-1") is None
    assert store.get(name=target_lease_name("a")).holder is None  # type: ignore[union-attr]
