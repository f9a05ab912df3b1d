"""Lease sharing on the real control plane, with real OS processes (tests/ha/lease_worker.py)."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.support.polling import wait_until
from writeback.adapters.kube.leasing import ROLE_LABEL

WORKER = Path(__file__).resolve().parent / "lease_worker.py"
TARGETS = tuple(f"target-{i}" for i in range(6))

pytestmark = pytest.mark.controlplane


@dataclass(kw_only=True)
class Cluster:
    kubeconfig: str
    namespace: str
    log: Path
    api: Any
    procs: dict[str, subprocess.Popen[bytes]]

    def spawn(self, identity: str, *, lease_seconds: float, targets: tuple[str, ...] = TARGETS) -> None:
        cmd = [
            sys.executable,
            str(WORKER),
            f"--kubeconfig={self.kubeconfig}",
            f"--namespace={self.namespace}",
            f"--identity={identity}",
            f"--targets={','.join(targets)}",
            f"--lease-seconds={lease_seconds}",
            f"--log={self.log}",
        ]
        out = self.log.with_name(f"{identity}.out")
        with out.open("wb") as sink:
            self.procs[identity] = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)

    def holders(self) -> dict[str, str | None]:
        """target lease name -> holder, straight from the API server."""
        leases = client.CoordinationV1Api(self.api).list_namespaced_lease(
            namespace=self.namespace, label_selector=f"{ROLE_LABEL}=target"
        )
        out: dict[str, str | None] = {}
        for item in leases.items:
            assert item.metadata is not None and item.metadata.annotations is not None and item.spec is not None
            out[item.metadata.annotations["writeback.dev/target"]] = item.spec.holder_identity
        return out

    def heartbeats(self) -> set[str]:
        leases = client.CoordinationV1Api(self.api).list_namespaced_lease(
            namespace=self.namespace, label_selector=f"{ROLE_LABEL}=replica"
        )
        return {item.spec.holder_identity for item in leases.items if item.spec and item.spec.holder_identity}

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def output(self) -> str:
        return "\n".join(f"--- {i}\n{self.log.with_name(f'{i}.out').read_text()[-3000:]}" for i in self.procs)

    def describe(self) -> str:
        """What a timed-out wait shows: who holds which lease, and each replica's output."""
        return f"leases: {self.holders()}\n{self.output()}"


@pytest.fixture
def cluster(controlplane: Any, k8s: Any, namespace: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(kubeconfig=controlplane.kubeconfig, namespace=namespace, log=tmp_path / "runs.jsonl", api=k8s, procs={})
    try:
        yield c
    finally:
        for proc in c.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def split_evenly(cluster: Cluster, replicas: set[str], share: int) -> Callable[[], bool]:
    def check() -> bool:
        holders = cluster.holders()
        if set(holders) != set(TARGETS) or not set(holders.values()) <= replicas:
            return False
        counts = Counter(holders.values())
        return set(counts) == replicas and max(counts.values()) <= share

    return check


def intervals(events: list[dict[str, Any]], *, killed: dict[str, float]) -> dict[str, list[tuple[float, float, str]]]:
    """Per target, the (start, stop, replica) runs; a run cut by SIGKILL ends at the kill time."""
    open_runs: dict[tuple[str, str], float] = {}
    runs: dict[str, list[tuple[float, float, str]]] = {}
    for e in sorted(events, key=lambda e: e["t"]):
        key = (e["replica"], e["target"])
        if e["event"] == "start":
            assert key not in open_runs, f"{key} started twice without a stop"
            open_runs[key] = e["t"]
        elif e["event"] == "stop":
            runs.setdefault(e["target"], []).append((open_runs.pop(key), e["t"], e["replica"]))
    for (replica, target), start in open_runs.items():
        assert replica in killed, f"{replica} left a run of {target} open without being killed"
        runs.setdefault(target, []).append((start, killed[replica], replica))
    return runs


def assert_never_two_at_once(runs: dict[str, list[tuple[float, float, str]]]) -> None:
    for target, spans in runs.items():
        spans.sort()
        for (s1, e1, r1), (s2, e2, r2) in itertools.pairwise(spans):
            assert s2 >= e1, f"{target} ran on {r1} [{s1:.3f}, {e1:.3f}] and on {r2} [{s2:.3f}, {e2:.3f}] at once"


def test_three_replicas_split_targets_and_take_over_from_a_killed_one(cluster: Cluster) -> None:
    for identity in ("alpha", "beta", "gamma"):
        cluster.spawn(identity, lease_seconds=3)
    everyone = {"alpha", "beta", "gamma"}
    wait_until(
        "three heartbeats", lambda: cluster.heartbeats() == everyone, timeout=60, step=0.2, context=cluster.describe
    )
    wait_until(
        "6 targets split 2/2/2", split_evenly(cluster, everyone, 2), timeout=60, step=0.2, context=cluster.describe
    )
    time.sleep(2)  # stays split: no flapping once balanced
    assert split_evenly(cluster, everyone, 2)(), cluster.holders()

    victim_targets = {t for t, h in cluster.holders().items() if h == "gamma"}
    assert len(victim_targets) == 2
    cluster.procs["gamma"].send_signal(signal.SIGKILL)
    cluster.procs["gamma"].wait(timeout=10)
    killed_at = time.time()

    survivors = {"alpha", "beta"}
    wait_until(
        "survivors hold all 6 targets, at most 3 each",
        split_evenly(cluster, survivors, 3),
        timeout=60,
        step=0.2,
        context=cluster.describe,
    )

    def taken_over() -> bool:
        after = {e["target"] for e in cluster.events() if e["event"] == "start" and e["t"] > killed_at}
        return victim_targets <= after

    wait_until("survivors run the dead replica's targets", taken_over, timeout=30, step=0.2, context=cluster.describe)
    first_takeover = min(
        e["t"]
        for e in cluster.events()
        if e["event"] == "start" and e["target"] in victim_targets and e["t"] > killed_at
    )
    assert first_takeover - killed_at > 1.0, "a survivor took a Lease before it could have expired"

    for identity in survivors:
        cluster.procs[identity].send_signal(signal.SIGTERM)
    for identity in survivors:
        assert cluster.procs[identity].wait(timeout=60) == 0, cluster.output()
    assert all(h is None for h in cluster.holders().values()), "a graceful stop hands every Lease back"
    assert cluster.heartbeats() == {"gamma"}, "graceful replicas delete their heartbeat; the killed one's remains"

    runs = intervals(cluster.events(), killed={"gamma": killed_at})
    assert set(runs) == set(TARGETS)
    assert_never_two_at_once(runs)
    by_replica = Counter(r for spans in runs.values() for _, _, r in spans)
    assert set(by_replica) == everyone


def test_graceful_stop_hands_targets_over_before_the_leases_expire(cluster: Cluster) -> None:
    lease = 12.0
    cluster.spawn("one", lease_seconds=lease)
    cluster.spawn("two", lease_seconds=lease)
    wait_until(
        "6 targets split 3/3", split_evenly(cluster, {"one", "two"}, 3), timeout=60, step=0.2, context=cluster.describe
    )
    handed = {t for t, h in cluster.holders().items() if h == "two"}
    stopped_at = time.time()
    cluster.procs["two"].send_signal(signal.SIGTERM)
    assert cluster.procs["two"].wait(timeout=30) == 0, cluster.output()
    wait_until(
        "'one' holds every target", split_evenly(cluster, {"one"}, 6), timeout=30, step=0.2, context=cluster.describe
    )

    def first_starts() -> dict[str, float]:
        took: dict[str, float] = {}
        for e in sorted(cluster.events(), key=lambda e: e["t"]):
            if e["replica"] == "one" and e["event"] == "start" and e["target"] in handed and e["t"] > stopped_at:
                took.setdefault(e["target"], e["t"])
        return took

    wait_until(
        "'one' runs the handed-over targets",
        lambda: set(first_starts()) == handed,
        timeout=10,
        step=0.2,
        context=cluster.describe,
    )
    took = first_starts()
    assert set(took) == handed
    assert max(took.values()) - stopped_at < lease - 2, "released Leases are taken at once, not after expiry"
    cluster.procs["one"].send_signal(signal.SIGTERM)
    assert cluster.procs["one"].wait(timeout=30) == 0, cluster.output()
    assert_never_two_at_once(intervals(cluster.events(), killed={}))


def test_joining_replicas_take_their_share_from_a_busy_one_without_overlap(cluster: Cluster) -> None:
    cluster.spawn("first", lease_seconds=3)
    wait_until(
        "'first' holds every target",
        split_evenly(cluster, {"first"}, 6),
        timeout=60,
        step=0.2,
        context=cluster.describe,
    )
    joined_at = time.time()
    cluster.spawn("second", lease_seconds=3)
    cluster.spawn("third", lease_seconds=3)
    everyone = {"first", "second", "third"}
    wait_until(
        "6 targets rebalanced 2/2/2", split_evenly(cluster, everyone, 2), timeout=60, step=0.2, context=cluster.describe
    )
    moved = {t for t, h in cluster.holders().items() if h != "first"}

    def new_holders_ran() -> bool:  # holding a Lease is not yet a cycle: wait for each new holder's first run
        started = {(e["target"], e["replica"]) for e in cluster.events() if e["event"] == "start"}
        return all((t, h) in started for t, h in cluster.holders().items() if t in moved)

    wait_until(
        "a cycle of each moved target by its new holder",
        new_holders_ran,
        timeout=60,
        step=0.2,
        context=cluster.describe,
    )
    for identity in everyone:
        cluster.procs[identity].send_signal(signal.SIGTERM)
    for identity in everyone:
        assert cluster.procs[identity].wait(timeout=60) == 0, cluster.output()
    runs = intervals(cluster.events(), killed={})
    assert_never_two_at_once(runs)  # 'first' stopped each moved target at a safe point before handing it over
    for target in moved:
        by_first = [e for s, e, r in runs[target] if r == "first"]
        by_new = [s for s, e, r in runs[target] if r != "first"]
        assert by_first and by_new and max(by_first) <= min(by_new), target
        assert min(by_new) > joined_at
