"""A coordinator for scheduler tests that hands out a run guard for any target it is asked about."""

from __future__ import annotations

from writeback.service.guards import RunGuard, SoleReplica


class RunEverything:
    """Owns whatever target it is asked about (``SoleReplica`` owns only the targets it was given)."""

    def begin(self, target: str) -> RunGuard | None:
        return SoleReplica(targets=[target]).begin(target)
