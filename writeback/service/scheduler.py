"""Running each target on its own schedule with APScheduler 3.x.

- one interval or cron job per target, with jitter; missed runs are coalesced;
- at most one run per target at a time (a per-target lock shared by the scheduled job, the retry job and
  the hotfix trigger; a trigger that finds the target busy runs once more right after);
- a failing run is retried by a one-off job with exponential backoff and never touches the other targets;
- ``ownership.begin(name)`` (a ``writeback.service.guards.Coordinator``: Leases in HA mode) is asked before each
  run; the run happens inside its guard;
- ``shutdown(grace)`` stops accepting runs, sets the stop event the running cycles see at their safe
  points, and waits (bounded) for the in-flight steps, so no push or API call is cut in half.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from writeback.config import Schedule, Target
from writeback.service.guards import Coordinator, RunGuard, SoleReplica

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class CycleContext:
    """What a running cycle may look at: why it runs, and whether to go on at the next safe point."""

    target: Target
    reason: str
    stop: threading.Event
    guard: RunGuard

    def keep_going(self) -> bool:
        """False once shutdown began or the target's lease was lost: stop at the next safe point."""
        return not self.stop.is_set() and self.guard.still_leader()


CycleRunner = Callable[[CycleContext], Any]


@dataclass(slots=True, kw_only=True)
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    failures: int = 0
    again: bool = False


def trigger_for(schedule: Schedule) -> IntervalTrigger | CronTrigger:
    jitter = int(schedule.jitter_seconds) or None
    if schedule.cron:
        cron = CronTrigger.from_crontab(schedule.cron, timezone=UTC)
        cron.jitter = jitter
        return cron
    assert schedule.interval_seconds is not None
    return IntervalTrigger(seconds=schedule.interval_seconds, jitter=jitter, timezone=UTC)


def period_seconds(schedule: Schedule) -> float:
    """Seconds between two runs (for a cron line: between its next two fire times)."""
    if not schedule.cron:
        assert schedule.interval_seconds is not None
        return schedule.interval_seconds
    cron = CronTrigger.from_crontab(schedule.cron, timezone=UTC)
    now = datetime.now(UTC)
    first = cron.get_next_fire_time(None, now)
    second = cron.get_next_fire_time(first, first + timedelta(seconds=1)) if first else None
    return (second - first).total_seconds() if first and second else 86400.0


def backoff_seconds(*, failures: int, schedule: Schedule) -> float:
    """initial, 2x initial, 4x initial ... capped at the maximum (failures counts from 1)."""
    exponent = min(max(failures - 1, 0), 30)
    return float(min(schedule.retry_initial_seconds * 2**exponent, schedule.retry_max_seconds))


class TargetScheduler:
    """One job per target; ``trigger`` for an extra (debounced) run; ``shutdown`` for SIGTERM.

    ``ownership`` says which targets this process may run (default: all of ``targets``); it is started and stopped
    by whoever made it (the service), not here.
    """

    def __init__(
        self,
        *,
        targets: Sequence[Target],
        run: CycleRunner,
        ownership: Coordinator | None = None,
        on_success: Callable[[str, float, Any], None] | None = None,
        on_failure: Callable[[str, float, BaseException], None] | None = None,
    ) -> None:
        self._targets = {t.name: t for t in targets}
        self._run = run
        self._ownership = ownership or SoleReplica(targets=[t.name for t in targets])
        self._on_success = on_success
        self._on_failure = on_failure
        self._state = {t.name: _State() for t in targets}
        self.stop = threading.Event()
        self._inflight = 0
        self._idle = threading.Condition()
        workers = max(1, min(len(targets), 8))
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=workers)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone=UTC,
        )

    @property
    def targets(self) -> Mapping[str, Target]:
        return self._targets

    def start(self) -> None:
        now = datetime.now(UTC)
        for name, target in self._targets.items():
            kwargs: dict[str, Any] = {}
            if not target.schedule.cron:  # the first interval run comes right away (plus jitter)
                delay = random.uniform(0, min(target.schedule.jitter_seconds, target.schedule.interval_seconds or 0))
                kwargs["next_run_time"] = now + timedelta(seconds=delay)
            self._scheduler.add_job(
                self._execute,
                trigger_for(target.schedule),
                args=(name, "schedule"),
                id=f"cycle:{name}",
                name=f"cycle of {name}",
                **kwargs,
            )
        self._scheduler.start()
        log.info("scheduler started", extra={"targets": ",".join(self._targets)})

    def trigger(self, name: str, *, reason: str, delay: float = 0.0) -> None:
        """Run ``name`` once after ``delay`` seconds; a new trigger before then restarts the delay (debounce)."""
        if self.stop.is_set() or name not in self._targets:
            return
        self._scheduler.add_job(
            self._execute,
            DateTrigger(run_date=datetime.now(UTC) + timedelta(seconds=delay), timezone=UTC),
            args=(name, reason),
            id=f"trigger:{name}",
            name=f"{reason} of {name}",
            replace_existing=True,
        )

    def next_retry(self, name: str) -> datetime | None:
        job = self._scheduler.get_job(f"retry:{name}")
        return job.next_run_time if job is not None else None

    def _execute(self, name: str, reason: str) -> None:
        state = self._state[name]
        if self.stop.is_set():
            return
        if not state.lock.acquire(blocking=False):
            state.again = True  # busy: run once more when the current run ends
            log.debug("target busy, queued one more run", extra={"target": name, "reason": reason})
            return
        with self._idle:
            self._inflight += 1
        try:
            self._guarded(name, reason)
        finally:
            state.lock.release()
            with self._idle:
                self._inflight -= 1
                self._idle.notify_all()
        if state.again and not self.stop.is_set():
            state.again = False
            self.trigger(name, reason="queued")

    def _guarded(self, name: str, reason: str) -> None:
        guard = self._ownership.begin(name)
        if guard is None:
            log.debug("not ours to run now", extra={"target": name})
            return
        with guard:
            self._cycle(name=name, reason=reason, guard=guard)

    def _cycle(self, *, name: str, reason: str, guard: RunGuard) -> None:
        target, state = self._targets[name], self._state[name]
        ctx = CycleContext(target=target, reason=reason, stop=self.stop, guard=guard)
        started = time.monotonic()
        log.info("cycle started", extra={"target": name, "reason": reason})
        try:
            result = self._run(ctx)
        except Exception as e:  # one target's failure never stops the others
            seconds = time.monotonic() - started
            state.failures += 1
            delay = backoff_seconds(failures=state.failures, schedule=target.schedule)
            log.error(
                "cycle failed: %s: %s; retry in %.0fs",
                type(e).__name__,
                e,
                delay,
                extra={"target": name, "failures": state.failures, "error_kind": type(e).__name__},
            )
            if self._on_failure:
                self._on_failure(name, seconds, e)
            if not self.stop.is_set():
                self._scheduler.add_job(
                    self._execute,
                    DateTrigger(run_date=datetime.now(UTC) + timedelta(seconds=delay), timezone=UTC),
                    args=(name, "retry"),
                    id=f"retry:{name}",
                    name=f"retry of {name}",
                    replace_existing=True,
                )
            return
        seconds = time.monotonic() - started
        state.failures = 0
        with contextlib.suppress(JobLookupError):
            self._scheduler.remove_job(f"retry:{name}")
        log.info("cycle done in %.2fs", seconds, extra={"target": name, "reason": reason})
        if self._on_success:
            self._on_success(name, seconds, result)

    def shutdown(self, *, grace: float) -> bool:
        """Stop accepting runs and wait up to ``grace`` seconds for the running ones; True if none is left."""
        self.stop.set()
        if self._scheduler.running:
            self._scheduler.pause()
            self._scheduler.remove_all_jobs()
        deadline = time.monotonic() + grace
        with self._idle:
            while self._inflight and time.monotonic() < deadline:
                self._idle.wait(timeout=max(0.0, deadline - time.monotonic()))
            clean = self._inflight == 0
        if self._scheduler.running:
            self._scheduler.shutdown(wait=clean)
        return clean
