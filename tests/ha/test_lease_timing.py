"""The pure Lease timing: whole seconds, the renew deadline before expiry, expiry timed by the observer."""

from __future__ import annotations

import pytest

from writeback.service.shares import LeaseTiming, expired, observe


@pytest.mark.parametrize(("asked", "seconds"), [(15, 15), (4.5, 5), (0.2, 1), (0, 1)])
def test_lease_seconds_are_whole_and_at_least_one(asked: float, seconds: int) -> None:
    assert LeaseTiming.for_seconds(asked).lease_seconds == seconds


def test_the_holder_stops_trusting_its_lease_before_anyone_can_see_it_expire() -> None:
    timing = LeaseTiming(lease_seconds=15)
    assert (timing.renew_interval, timing.renew_deadline) == (5, 10)
    assert timing.trusted(renewed_at=100.0, now=109.9)
    assert not timing.trusted(renewed_at=100.0, now=110.0)
    # another replica first saw that renewal no earlier than it was sent: it sees expiry at 115 at the soonest
    assert not expired(holder="me", first_seen=100.0, duration_seconds=15, now=114.9)
    assert expired(holder="me", first_seen=100.0, duration_seconds=15, now=115.0)
    assert timing.stale_heartbeat_seconds == 150 and LeaseTiming(lease_seconds=3).stale_heartbeat_seconds == 60


def test_a_lease_nobody_holds_is_free_and_a_zero_duration_counts_as_one_second() -> None:
    assert expired(holder=None, first_seen=100.0, duration_seconds=15, now=100.0)
    assert expired(holder="", first_seen=100.0, duration_seconds=15, now=100.0)
    assert not expired(holder="a", first_seen=100.0, duration_seconds=0, now=100.5)
    assert expired(holder="a", first_seen=100.0, duration_seconds=0, now=101.0)


def test_expiry_restarts_whenever_the_record_changes() -> None:
    seen = observe({}, versions=[("a", "1"), ("b", "7")], now=10.0)
    assert seen == {"a": ("1", 10.0), "b": ("7", 10.0)}
    seen = observe(seen, versions=[("a", "1"), ("b", "8"), ("c", "2")], now=12.0)
    assert seen == {"a": ("1", 10.0), "b": ("8", 12.0), "c": ("2", 12.0)}  # a gone Lease is forgotten
    assert observe(seen, versions=[], now=13.0) == {}
