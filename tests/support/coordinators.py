"""A coordinator for scheduler and service tests that owns some targets only (what the Lease coordinator answers
on one replica)."""

from __future__ import annotations

from collections.abc import Iterable

from writeback.service.guards import RunGuard, SoleReplica


class OwnsOnly:
    """A ``Coordinator`` that owns the ``owned`` targets only, as the Lease coordinator answers on one replica, and
    records each target it was asked about (``asked``)."""

    def __init__(self, owned: Iterable[str]) -> None:
        self.owned = frozenset(owned)
        self.asked: list[str] = []

    def start(self) -> None:
        return None

    def stop(self, *, grace_seconds: float = 0.0) -> None:
        return None

    def owned_targets(self) -> frozenset[str]:
        return self.owned

    def begin(self, target: str) -> RunGuard | None:
        self.asked.append(target)
        return SoleReplica(targets=sorted(self.owned)).begin(target)
