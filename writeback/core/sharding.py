"""Sharding targets between replicas: the pure assignment math behind the Lease coordinator.

Every replica sees the same target list and (eventually) the same set of live replicas. Each replica takes at most
``ceil(targets / live replicas)`` targets. Preference is by rendezvous hashing (highest random weight), so replicas
mostly reach for different targets, a joining replica gets the targets it "wins", and a leaving replica's targets
spread over the others. Conflicts that remain are settled by the Lease's optimistic concurrency, not here.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

REPLICA_LEASE_PREFIX = "writeback-replica-"
TARGET_LEASE_PREFIX = "writeback-target-"
_UNSAFE = re.compile(r"[^a-z0-9.-]+")
_MAX_NAME = 253


def fair_share(*, targets: int, replicas: int) -> int:
    """The most targets one replica may hold: ``ceil(targets / replicas)`` (replicas counted as at least 1)."""
    if targets <= 0:
        return 0
    return math.ceil(targets / max(1, replicas))


def weight(*, replica: str, target: str) -> int:
    """The rendezvous weight of ``replica`` for ``target``: stable across processes and platforms."""
    digest = hashlib.sha256(f"{replica}\x00{target}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def winner(*, target: str, replicas: Iterable[str]) -> str | None:
    """The replica that ``target`` prefers among ``replicas`` (None when there is none)."""
    best: tuple[int, str] | None = None
    for r in replicas:
        key = (weight(replica=r, target=target), r)
        if best is None or key > best:
            best = key
    return None if best is None else best[1]


def _dns_name(prefix: str, raw: str) -> str:
    safe = _UNSAFE.sub("-", raw.lower()).strip("-.") or "x"
    if safe != raw:  # keep distinct inputs distinct after the character mapping
        safe = f"{safe}-{hashlib.sha256(raw.encode()).hexdigest()[:8]}"
    return (prefix + safe)[:_MAX_NAME]


def target_lease_name(target: str) -> str:
    """``writeback-target-<name>``; characters a Lease name cannot hold are mapped and a short hash appended."""
    return _dns_name(TARGET_LEASE_PREFIX, target)


def replica_lease_name(identity: str) -> str:
    """``writeback-replica-<identity>``, mapped like :func:`target_lease_name`."""
    return _dns_name(REPLICA_LEASE_PREFIX, identity)


@dataclass(frozen=True, kw_only=True)
class ShardView:
    """What one replica knows at one instant.

    ``mine``: targets whose Lease this replica holds and may keep; ``taken``: targets whose Lease another replica
    holds and has not let expire. Every other configured target is free to acquire.
    """

    me: str
    targets: tuple[str, ...]
    live_replicas: frozenset[str]
    mine: frozenset[str]
    taken: frozenset[str]


@dataclass(frozen=True, kw_only=True)
class ShardPlan:
    """What to do with the Leases: renew ``keep``, try to acquire ``acquire``, hand back ``release``."""

    keep: tuple[str, ...]
    acquire: tuple[str, ...]
    release: tuple[str, ...]
    share: int


def preference_order(*, me: str, targets: Iterable[str], live_replicas: Iterable[str]) -> list[str]:
    """``targets`` sorted by how strongly this replica should hold them: the ones it wins first, then by weight."""
    live = tuple(sorted(set(live_replicas) | {me}))
    return sorted(
        targets,
        key=lambda t: (winner(target=t, replicas=live) != me, -weight(replica=me, target=t), t),
    )


def plan_shard(view: ShardView) -> ShardPlan:
    """Keep up to the fair share (most preferred first), release the excess, acquire free targets up to the share."""
    configured = set(view.targets)
    live = view.live_replicas | {view.me}
    share = fair_share(targets=len(configured), replicas=len(live))
    held = preference_order(me=view.me, targets=view.mine & configured, live_replicas=live)
    keep, release = held[:share], held[share:] + sorted(view.mine - configured)
    free = configured - view.mine - view.taken
    room = max(0, share - len(keep))
    acquire = preference_order(me=view.me, targets=free, live_replicas=live)[:room]
    return ShardPlan(keep=tuple(keep), acquire=tuple(acquire), release=tuple(release), share=share)
