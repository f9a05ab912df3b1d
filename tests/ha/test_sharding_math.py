"""The pure assignment math: fair share, Lease names and convergence of the per-replica plans."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from writeback.service.shares import (
    ShardView,
    fair_share,
    plan_shard,
    preference_order,
    replica_lease_name,
    target_lease_name,
    winner,
)

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@pytest.mark.parametrize(
    ("targets", "replicas", "share"),
    [(6, 3, 2), (6, 4, 2), (7, 3, 3), (1, 5, 1), (6, 1, 6), (0, 3, 0), (5, 0, 5)],
)
def test_fair_share_is_the_ceiling(targets: int, replicas: int, share: int) -> None:
    assert fair_share(targets=targets, replicas=replicas) == share


def test_lease_names_are_valid_and_distinct() -> None:
    names = ["prod", "a_b", "a-b", "a.b", "UPPER"]
    leases = [target_lease_name(n) for n in names]
    assert leases[0] == "writeback-target-prod"
    assert leases[3] == "writeback-target-a.b"
    assert len(set(leases)) == len(leases)
    for lease in [*leases, replica_lease_name("writeback-5d8f9-abc12"), replica_lease_name("Host_1-99")]:
        assert DNS_SUBDOMAIN.match(lease), lease
    assert replica_lease_name("pod-1") == "writeback-replica-pod-1"


def test_plan_keeps_preferred_releases_excess_and_drops_unconfigured() -> None:
    targets = tuple(f"t{i}" for i in range(6))
    view = ShardView(
        me="a",
        targets=targets,
        live_replicas=frozenset({"a", "b", "c"}),
        mine=frozenset({*targets, "gone"}),
        taken=frozenset(),
    )
    plan = plan_shard(view)
    assert plan.share == 2
    assert len(plan.keep) == 2
    assert set(plan.keep) | set(plan.release) == {*targets, "gone"}
    assert plan.acquire == ()
    assert plan.keep == tuple(preference_order(me="a", targets=targets, live_replicas={"a", "b", "c"})[:2])


def _rounds(*, targets: tuple[str, ...], live: list[str], owner: dict[str, str], rounds: int = 4) -> dict[str, str]:
    """Each replica in turn plans with a consistent view and applies it; an acquire fails if the target is taken."""
    for _ in range(rounds):
        for me in live:
            mine = frozenset(t for t, o in owner.items() if o == me)
            taken = frozenset(t for t, o in owner.items() if o != me)
            plan = plan_shard(ShardView(me=me, targets=targets, live_replicas=frozenset(live), mine=mine, taken=taken))
            for t in plan.release:
                del owner[t]
            for t in plan.acquire:
                assert t not in owner
                owner[t] = me
    return owner


def _balanced(owner: dict[str, str], targets: tuple[str, ...], live: list[str]) -> None:
    assert set(owner) == set(targets)
    assert set(owner.values()) <= set(live)
    share = fair_share(targets=len(targets), replicas=len(live))
    for r in live:
        assert sum(1 for o in owner.values() if o == r) <= share


@settings(max_examples=60, deadline=None)
@given(n_targets=st.integers(1, 12), n_replicas=st.integers(1, 5), victim=st.integers(0, 4))
def test_plans_converge_to_a_fair_split_after_join_and_death(n_targets: int, n_replicas: int, victim: int) -> None:
    targets = tuple(f"target-{i}" for i in range(n_targets))
    live = [f"replica-{i}" for i in range(n_replicas)]
    owner = _rounds(targets=targets, live=live[:1], owner={})
    assert set(owner.values()) == {live[0]} and set(owner) == set(targets)  # one replica holds everything
    owner = _rounds(targets=targets, live=live, owner=owner)  # the others join: the first hands work over
    _balanced(owner, targets, live)
    if n_replicas > 1:
        dead = live.pop(victim % n_replicas)  # its Leases expire: the survivors see its targets free
        owner = {t: o for t, o in owner.items() if o != dead}
        owner = _rounds(targets=targets, live=live, owner=owner)
        _balanced(owner, targets, live)


def test_rendezvous_winner_is_stable_and_spread() -> None:
    replicas = [f"r{i}" for i in range(3)]
    targets = [f"t{i}" for i in range(60)]
    wins = [winner(target=t, replicas=replicas) for t in targets]
    assert wins == [winner(target=t, replicas=list(reversed(replicas))) for t in targets]
    assert all(wins.count(r) >= 10 for r in replicas)  # not all on one replica
    assert winner(target="t", replicas=[]) is None
