"""Sharding targets between replicas: the pure arithmetic behind the Lease coordinator. Pure.

The timing (:class:`LeaseTiming`, :func:`observe`, :func:`expired`) follows client-go: a Lease is expired when its
record has not changed for ``leaseDurationSeconds`` as timed by the *observer's* clock, and its holder trusts it only
until ``renew_deadline`` after it sent its last successful renewal.

The assignment (:func:`plan_shard`): every replica sees the same target list and (eventually) the same set of live
replicas. Each replica takes at most ``ceil(targets / live replicas)`` targets. Preference is by rendezvous hashing
(highest random weight), so replicas mostly reach for different targets, a joining replica gets the targets it
"wins", and a leaving replica's targets spread over the others. Conflicts that remain are settled by the Lease's
optimistic concurrency, not here.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

REPLICA_LEASE_PREFIX = "writeback-replica-"
TARGET_LEASE_PREFIX = "writeback-target-"
_UNSAFE = re.compile(r"[^a-z0-9.-]+")
_MAX_NAME = 253


@dataclass(frozen=True, kw_only=True)
class LeaseTiming:
    """How long a Lease lasts, how often its holder renews it, and until when the holder may trust it.

    The holder renews every third of the duration and trusts its Lease for two thirds of it after the *start* of
    its last successful renewal: always earlier than any other replica can see the Lease expire.
    """

    lease_seconds: int

    @classmethod
    def for_seconds(cls, seconds: float) -> LeaseTiming:
        """Whole seconds (the API field is an integer), at least one."""
        return cls(lease_seconds=max(1, math.ceil(seconds)))

    @property
    def renew_interval(self) -> float:
        return self.lease_seconds / 3

    @property
    def renew_deadline(self) -> float:
        return self.lease_seconds * 2 / 3

    @property
    def stale_heartbeat_seconds(self) -> int:
        """How long a dead replica's heartbeat Lease is left before a survivor deletes it."""
        return max(60, 10 * self.lease_seconds)

    def trusted(self, *, renewed_at: float, now: float) -> bool:
        """Whether a Lease renewed at ``renewed_at`` (the moment the write was sent) is still ours at ``now``."""
        return now < renewed_at + self.renew_deadline


Seen = Mapping[str, tuple[str, float]]  # Lease name -> (resourceVersion, when that version was first observed)


def observe(previous: Seen, *, versions: Iterable[tuple[str, str]], now: float) -> dict[str, tuple[str, float]]:
    """When each Lease's current record (``(name, resourceVersion)`` pairs) was first seen; a change restarts it."""
    seen = {}
    for name, version in versions:
        prev = previous.get(name)
        seen[name] = prev if prev is not None and prev[0] == version else (version, now)
    return seen


def expired(*, holder: str | None, first_seen: float, duration_seconds: int, now: float) -> bool:
    """A Lease nobody holds, or whose record has not changed for its duration (at least a second) by ``now``."""
    return not holder or now >= first_seen + max(1, duration_seconds)


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
