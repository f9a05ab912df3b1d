"""The scheduler with real APScheduler threads: schedules, one run at a time, backoff, ownership, shutdown."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.coordinators import OwnsOnly
from tests.support.polling import wait_until
from writeback.config import Schedule, Target
from writeback.service.scheduler import CycleContext, TargetScheduler, backoff_seconds, period_seconds, trigger_for


def target(name: str, **schedule: Any) -> Target:
    return Target.model_validate({"name": name, "repo_url": "https://git.example/r.git", "schedule": schedule})


def test_backoff_doubles_up_to_the_cap_and_cron_periods_are_measured() -> None:
    s = Schedule(retry_initial_seconds=2, retry_max_seconds=10)
    assert [backoff_seconds(failures=n, schedule=s) for n in (1, 2, 3, 4, 5)] == [2, 4, 8, 10, 10]
    assert period_seconds(Schedule(cron="*/15 * * * *")) == 900
    assert period_seconds(Schedule(interval_seconds=42)) == 42
    cron = trigger_for(Schedule(cron="0 3 * * *", jitter_seconds=30))
    assert cron.jitter == 30


def test_a_failing_target_is_retried_with_backoff_and_never_stops_the_other() -> None:
    runs: dict[str, list[float]] = {"ok": [], "bad": []}
    failures: list[tuple[str, str]] = []
    successes: list[str] = []

    def run(ctx: CycleContext) -> str:
        runs[ctx.target.name].append(time.monotonic())
        if ctx.target.name == "bad":
            raise RuntimeError("forge down")
        return "done"

    sched = TargetScheduler(
        targets=[
            target("ok", interval_seconds=0.3, jitter_seconds=0),
            target("bad", interval_seconds=3600, jitter_seconds=0, retry_initial_seconds=0.2, retry_max_seconds=5),
        ],
        run=run,
        on_success=lambda name, seconds, result: successes.append(f"{name}:{result}"),
        on_failure=lambda name, seconds, e: failures.append((name, str(e))),
    )
    sched.start()
    try:
        wait_until(
            "4 runs of bad and 5 of ok", lambda: len(runs["bad"]) >= 4 and len(runs["ok"]) >= 5, timeout=10, step=0.02
        )
        assert sched.next_retry("bad") is not None
    finally:
        assert sched.shutdown(grace=5)
    gaps = [b - a for a, b in zip(runs["bad"], runs["bad"][1:], strict=False)]
    assert gaps[0] >= 0.15 and gaps[1] >= 0.35 and gaps[2] >= 0.75  # 0.2, 0.4, 0.8: exponential
    assert all(f == ("bad", "forge down") for f in failures)
    assert successes and all(s == "ok:done" for s in successes)


def test_at_most_one_run_per_target_and_a_trigger_while_busy_runs_once_more() -> None:
    active, peak, count = 0, 0, 0
    lock = threading.Lock()
    release = threading.Event()

    def run(ctx: CycleContext) -> None:
        nonlocal active, peak, count
        with lock:
            active += 1
            count += 1
            peak = max(peak, active)
        release.wait(5)
        with lock:
            active -= 1

    sched = TargetScheduler(targets=[target("t", interval_seconds=0.05, jitter_seconds=0)], run=run)
    sched.start()
    try:
        wait_until("the first run", lambda: count == 1, timeout=10, step=0.02)
        for _ in range(5):
            sched.trigger("t", reason="hotfix")
        time.sleep(0.5)
        assert count == 1 and peak == 1  # busy: nothing ran beside it
        release.set()
        wait_until("the second run", lambda: count >= 2, timeout=10, step=0.02)
    finally:
        assert sched.shutdown(grace=5)
    assert peak == 1


def test_a_debounced_trigger_runs_once_after_the_last_event() -> None:
    started: list[tuple[str, float]] = []

    def run(ctx: CycleContext) -> None:
        started.append((ctx.reason, time.monotonic()))

    sched = TargetScheduler(targets=[target("t", cron="0 0 1 1 *", jitter_seconds=0)], run=run)
    sched.start()
    try:
        first = time.monotonic()
        for _ in range(4):
            sched.trigger("t", reason="hotfix", delay=0.4)
            time.sleep(0.1)
        wait_until("one run of the debounced triggers", lambda: len(started) == 1, timeout=10, step=0.02)
        time.sleep(0.6)
    finally:
        sched.shutdown(grace=5)
    assert [r for r, _ in started] == ["hotfix"]
    assert started[0][1] - first >= 0.7  # 0.3 s of events, then the 0.4 s debounce


def test_targets_this_replica_does_not_own_are_not_run() -> None:
    ran: list[str] = []
    owner = OwnsOnly({"mine"})  # what the Lease coordinator answers: only `mine` is ours
    sched = TargetScheduler(
        targets=[target("mine", interval_seconds=0.1, jitter_seconds=0),
                 target("theirs", interval_seconds=0.1, jitter_seconds=0)],
        run=lambda ctx: ran.append(ctx.target.name),
        ownership=owner,
    )  # fmt: skip
    sched.start()
    try:
        wait_until(
            "two runs of mine, theirs asked twice",
            lambda: ran.count("mine") >= 2 and owner.asked.count("theirs") >= 2,
            timeout=10,
            step=0.02,
        )
    finally:
        sched.shutdown(grace=5)
    assert set(ran) == {"mine"}


def test_shutdown_waits_for_the_running_step_and_stops_at_its_safe_point() -> None:
    in_step = threading.Event()
    seen: list[bool] = []

    def run(ctx: CycleContext) -> None:
        in_step.set()
        time.sleep(0.8)  # the push in flight: never cut in half
        seen.append(ctx.keep_going())  # the next safe point: told to stop

    sched = TargetScheduler(targets=[target("t", interval_seconds=3600, jitter_seconds=0)], run=run)
    sched.start()
    assert in_step.wait(5)
    began = time.monotonic()
    assert sched.shutdown(grace=10) is True
    assert time.monotonic() - began >= 0.5
    assert seen == [False]
    sched.trigger("t", reason="late")  # refused after shutdown
    time.sleep(0.2)
    assert len(seen) == 1


def test_shutdown_gives_up_after_the_grace_period() -> None:
    in_step, release = threading.Event(), threading.Event()

    def run(ctx: CycleContext) -> None:
        in_step.set()
        release.wait(10)

    sched = TargetScheduler(targets=[target("t", interval_seconds=3600, jitter_seconds=0)], run=run)
    sched.start()
    assert in_step.wait(5)
    began = time.monotonic()
    try:
        assert sched.shutdown(grace=0.5) is False
        assert time.monotonic() - began < 3
    finally:
        release.set()


@pytest.mark.parametrize("bad", [{"cron": "61 * * * *"}, {"interval_seconds": None}, {"interval_seconds": 0}])
def test_bad_schedules_are_config_errors(bad: dict[str, Any]) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        Schedule.model_validate(bad)
