"""Who may run which target now: the one ``Coordinator`` Protocol, its run guard, and the single-replica one.

The scheduler asks ``coordinator.begin(target)`` before each run and runs inside the guard it gets; the service
starts and stops the coordinator and reports readiness for ``owned_targets()`` only. ``SoleReplica`` here owns
every configured target (``leader.enabled: false``); ``writeback.service.sharding.LeaseCoordinator`` shares them
between replicas through Leases.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Protocol


class RunGuard:
    """One run of one target. ``still_leader()`` is the safe-point check; leaving the ``with`` block ends the run."""

    def __init__(self, *, target: str, check: Callable[[], bool], done: Callable[[], None]) -> None:
        self.target = target
        self._check = check
        self._done = done
        self._ended = False

    def still_leader(self) -> bool:
        return not self._ended and self._check()

    def end(self) -> None:
        if not self._ended:
            self._ended = True
            self._done()

    def __enter__(self) -> RunGuard:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.end()


class Coordinator(Protocol):
    """Start and stop coordinating, which targets are ours now, and a guard for one run (None: not ours now)."""

    def start(self) -> None: ...
    def stop(self, *, grace_seconds: float) -> None: ...
    def owned_targets(self) -> frozenset[str]: ...
    def begin(self, target: str) -> RunGuard | None: ...


class SoleReplica:
    """No coordination (``leader.enabled: false``): this process owns every configured target."""

    def __init__(self, *, targets: Sequence[str]) -> None:
        self._targets = frozenset(targets)

    def start(self) -> None:
        return None

    def stop(self, *, grace_seconds: float = 0.0) -> None:
        return None

    def owned_targets(self) -> frozenset[str]:
        return self._targets

    def begin(self, target: str) -> RunGuard | None:
        if target not in self._targets:
            return None
        return RunGuard(target=target, check=lambda: True, done=lambda: None)
